package sweep

import (
	"context"
	"testing"

	"github.com/kvtier/kvtier/results"
	"github.com/kvtier/kvtier/tiers"
)

// TestSweepRemoteTier runs the remote tier through the sweep harness with
// an embedded loopback peer over TCP.
func TestSweepRemoteTier(t *testing.T) {
	t.Parallel()
	o := tinyOptions(t)
	o.Tiers = []string{"remote"}
	o.Copy = []tiers.CopyMode{tiers.PerCopy, tiers.Contiguous}
	o.TierOptions["remote"].(*tiers.RemoteOptions).Conns = 2
	_, rows, log, err := runSweep(t, context.Background(), o)
	if err != nil {
		t.Fatalf("sweep: %v\n%s", err, log)
	}
	if len(rows) == 0 {
		t.Fatal("no rows")
	}
	verified := 0
	for _, r := range rows {
		if r.Tier != "remote" || r.Status != results.StatusOK || r.Transport != "tcp" ||
			r.Get("path") != "loopback" || r.Get("src_mem") != "peer" || r.Get("device") != "tcp" {
			t.Fatalf("row %+v", r)
		}
		if r.Get("verified") == "true" {
			verified++
		}
	}
	if verified == 0 {
		t.Fatal("no verified rows")
	}
}
