package vllmsim

import (
	"math"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kvtier/kvtier/serving"
)

// TestLagPerWindow stalls the engine (a hook that sleeps on the virtual
// clock after a step's wait) by 3 s in one window and by 2.1 s in the
// next: each window's lag is its own stall, the second not hidden by
// the first (how much the running maximum rose says 0 s there), and a
// scrape during a stall sees the step in flight overdue.
func TestLagPerWindow(t *testing.T) {
	inBubble(t, func(t *testing.T, net *MemNet) {
		s, url := memServer(t, net, "sim", Config{TimeScale: 1, Model: "m"})
		var stall atomic.Int64
		s.stall = func() { time.Sleep(time.Duration(stall.Swap(0))) }
		c := net.Client()
		metrics := func() serving.Snapshot {
			t.Helper()
			resp, err := c.Get(url + "/metrics")
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			snap, err := serving.ParseMetrics(resp.Body, "m")
			if err != nil {
				t.Fatal(err)
			}
			return snap
		}
		body := `{"prompt": "` + strings.Repeat("w ", 200) + `", "max_tokens": 4}`
		for i, want := range []time.Duration{3 * time.Second, 2100 * time.Millisecond, 0} {
			before := metrics()
			stall.Store(int64(want))
			postRaw(t, c, url, "/v1/completions", body)
			after := metrics()
			d := serving.Sub(before, after)
			if !d.SimLagFound || math.Abs(d.SimLag-want.Seconds()) > 1e-3 {
				t.Errorf("window %d, stalled %v: sim lag %g s (found %t), want %g s; running maximum rose by %g s", i, want, d.SimLag, d.SimLagFound, want.Seconds(), after.SimLag.Value-before.SimLag.Value)
			}
		}
		if math.Abs(s.Lag().Seconds()-3) > 1e-3 {
			t.Errorf("lag over the server's life %v, want 3s", s.Lag())
		}
		before := metrics()
		stall.Store(int64(time.Hour))
		go func() {
			if resp, err := c.Post(url+"/v1/completions", "application/json", strings.NewReader(body)); err == nil {
				resp.Body.Close()
			}
		}()
		time.Sleep(time.Minute)
		if d := serving.Sub(before, metrics()); !(d.SimLag >= 59) {
			t.Errorf("a scrape 1 min into an hour's stall says the sim is %g s behind", d.SimLag)
		}
		s.Close()
	})
}
