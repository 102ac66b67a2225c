package replayer

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/kvtier/kvtier/option"
)

// TestWorkloadErrNamesFlag checks which flag a workload's error names: a
// workload too large to hold names --num-prompts, whichever source it
// came from; other errors keep the field given, or their own.
func TestWorkloadErrNamesFlag(t *testing.T) {
	t.Parallel()
	tooLarge := fmt.Errorf("trace.jsonl: %w: the first 9 requests hold more than 8 GiB", ErrTooLarge)
	tests := []struct {
		name  string
		err   error
		field string
		want  string
	}{
		{"too large, trace", tooLarge, "trace", "--num-prompts: trace.jsonl: workload too large"},
		{"too large, generated", tooLarge, "", "--num-prompts: trace.jsonl: workload too large"},
		{"unreadable trace", errors.New("no such file"), "trace", "--trace: no such file"},
		{"generator's own", option.Errorf("turns", "want 1 to 65536, got 0"), "", "--turns: want 1 to 65536"},
	}
	for _, tt := range tests {
		got := option.Render(workloadErr(tt.err, tt.field), func(f string) string { return "--" + f })
		if !strings.HasPrefix(got, tt.want) {
			t.Errorf("%s: %q, want it to begin %q", tt.name, got, tt.want)
		}
	}
	if workloadErr(nil, "trace") != nil {
		t.Error("no error became one")
	}
}
