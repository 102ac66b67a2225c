package serving

import (
	"context"
	"encoding/json"
	"fmt"
	"time"
)

// Slots is how many sequences a server runs at once, and what said so.
type Slots struct {
	N      int    // 0: unknown
	Source string // e.g. "GET /props total_slots"; "" when N is 0
}

// maxSlots bounds a slot count a server reports: beyond it the answer
// is not believed.
const maxSlots = 1 << 20

// Slots asks the server how many sequences it runs at once, where its
// family says so over HTTP (Traits.Slots: llama.cpp's GET /props
// total_slots, SGLang's GET /get_server_info max_running_requests),
// within 5 s. A family that does not say (Ollama, whose slots are
// OLLAMA_NUM_PARALLEL and appear only in its log, ServerLog.Slots; vLLM)
// or an answer without the field is N 0.
func (c *Client) Slots(ctx context.Context) Slots {
	t := c.DetectFamily(ctx).Traits()
	if t.SlotsAt == "" {
		return Slots{}
	}
	var body map[string]json.RawMessage
	if _, err := c.With(5*time.Second, 0).GetJSON(ctx, t.SlotsAt, &body); err != nil {
		return Slots{}
	}
	var n int
	if json.Unmarshal(body[t.SlotsField], &n) != nil || n < 1 || n > maxSlots {
		return Slots{}
	}
	return Slots{N: n, Source: fmt.Sprintf("%s: GET %s %s", t.Title, t.SlotsAt, t.SlotsField)}
}
