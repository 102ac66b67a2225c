package mesh

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/kvtier/kvtier/results"
	"github.com/kvtier/kvtier/results/resultstest"
	"github.com/kvtier/kvtier/system"
)

// A rank with the wrong token, or options that differ, is refused with
// the reason; the rendezvous then fails on every rank with one line
// naming the ranks that are missing.
func TestRendezvousRefusals(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		spoil func(*Config)
		want  string
	}{
		{"wrong token", func(c *Config) { c.Token = "guess" }, "token"},
		{"other sizes", func(c *Config) { c.Settings["sizes"] = "8 MiB" }, `sizes="8 MiB", rank 0 has`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cfg := testConfig(3)
			cfg.RendezvousTimeout = 500 * time.Millisecond
			co, err := Listen(cfg, "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			defer co.Close(nil)
			good, bad := newTestRank(t, 1, 3, "b", nil), newTestRank(t, 2, 3, "c", nil)
			goodErr, badErr := make(chan error, 1), make(chan error, 1)
			join := func(m Member, c Config, errc chan error) {
				rk, _, err := DialCoordinator(context.Background(), c, co.Addr().String())
				if err == nil {
					defer rk.Close()
					_, err = rk.Join(context.Background(), m)
				}
				errc <- err
			}
			badCfg := testConfig(3)
			tc.spoil(&badCfg)
			go join(good.member, cfg, goodErr)
			go join(bad.member, badCfg, badErr)
			_, err = co.Rendezvous(context.Background(), newTestRank(t, 0, 3, "a", nil).member)
			const line = "rank(s) 2 of 3 did not join within 500ms"
			if err == nil || !strings.Contains(err.Error(), line) {
				t.Fatalf("rank 0: %v, want %q", err, line)
			}
			if err := <-goodErr; !errors.Is(err, ErrFailed) || !strings.Contains(err.Error(), line) {
				t.Errorf("rank 1: %v, want the coordinator's line %q", err, line)
			}
			if err := <-badErr; err == nil || !strings.Contains(err.Error(), "refused rank 2") || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("rank 2: %v, want a refusal naming %q", err, tc.want)
			}
		})
	}
}

// A rank finds no coordinator: it gives up within the rendezvous timeout
// naming rank 0.
func TestNoCoordinator(t *testing.T) {
	t.Parallel()
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	addr := ln.Addr().String()
	ln.Close()
	cfg := testConfig(2)
	cfg.RendezvousTimeout = 300 * time.Millisecond
	start := time.Now()
	_, _, err := DialCoordinator(context.Background(), cfg, addr)
	if err == nil || !strings.Contains(err.Error(), "rank(s) 0 did not answer within 300ms") {
		t.Fatalf("got %v", err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Fatalf("gave up after %v", d)
	}
}

// A rank that joins and then says nothing (stopped, or its host gone) is
// gone after the idle timeout: its pairs are error rows, the run ends.
func TestSilentRankGone(t *testing.T) {
	t.Parallel()
	cfg := testConfig(2)
	cfg.IdleTimeout = 300 * time.Millisecond
	co, err := Listen(cfg, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r0, r1 := newTestRank(t, 0, 2, "a", nil), newTestRank(t, 1, 2, "b", nil)
	conn, err := net.Dial("tcp", co.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	silent := &link{c: conn, idle: time.Minute}
	silent.send(message{Kind: kindJoin, Token: testToken, Member: &r1.member, Settings: cfg.Settings})
	if _, err := co.Rendezvous(context.Background(), r0.member); err != nil {
		t.Fatal(err)
	}
	col := newCollector(&resultstest.Sink{})
	start := time.Now()
	errc := make(chan error, 1)
	go func() {
		errc <- co.task(context.Background(), Task{Pattern: Pairwise, Src: 0, Dst: 1, Layouts: []string{"blockwise"}, Sizes: []int64{1 << 20}}, r0.worker, col)
	}()
	select {
	case err := <-errc:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a silent rank held the coordinator for 10s (idle timeout 300ms)")
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("a silent rank held the coordinator for %v (idle timeout 300ms)", d)
	}
	rows := col.sink.(*resultstest.Sink).Rows()
	if len(rows) != 1 || rows[0].Status != results.StatusError || !strings.Contains(rows[0].Reason, "idle timeout") {
		t.Fatalf("rows %+v, want one error row saying idle timeout", rows)
	}
}

func TestCollectorMatrix(t *testing.T) {
	t.Parallel()
	col := newCollector(&resultstest.Sink{})
	row := func(src, dst string, status results.Status, verified string, gbps float64) results.Row {
		r := results.NewRow(Suite.Name)
		r.Layout, r.Bytes, r.Status, r.GBps = "blockwise", 1<<20, status, gbps
		r.Set("src_rank", src)
		r.Set("dst_rank", dst)
		r.Set("verified", verified)
		r.Set("pair", PairInter)
		if status == results.StatusError {
			r.Reason = "peer gone"
		}
		return r
	}
	for _, r := range []results.Row{
		row("0", "1", results.StatusOK, "true", 1), row("0", "1", results.StatusOK, "", 3), row("0", "1", results.StatusOK, "true", 2),
		row("1", "0", results.StatusError, "", 0), row("2", "0", results.StatusOK, "", 1),
	} {
		col.Write(r)
	}
	m := col.matrix()
	if len(m) != 3 {
		t.Fatalf("%d cells, want 3", len(m))
	}
	if c := m[2]; c.Get("n") != "1" || c.Get("verified") != "false" {
		t.Errorf("cell 2->0 without a verified rep: %v", c.Extra)
	}
	if c := m[0]; c.Get("n") != "3" || c.Get("gb_per_s_p50") != "2" || c.Get("verified") != "true" || c.Get("errors") != "0" {
		t.Errorf("cell 0->1: %v", c.Extra)
	}
	if c := m[1]; c.Get("n") != "0" || c.Get("verified") != "false" || c.Get("errors") != "1" || c.Reason != "peer gone" || c.Get("gb_per_s_p50") != "" {
		t.Errorf("cell 1->0: %v %q", c.Extra, c.Reason)
	}
}

func TestPickNIC(t *testing.T) {
	t.Parallel()
	nics := []results.NIC{
		{Name: "mlx5_0", State: "ACTIVE", PCIAddress: "0000:1a:00.0"},
		{Name: "mlx5_1", State: "DOWN", PCIAddress: "0000:3a:00.0"},
		{Name: "mlx5_2", State: "ACTIVE", PCIAddress: "0000:9a:00.0"},
	}
	dist := func(gpu, nic string) string {
		return map[string]string{"0000:9a:00.0": system.DistSameSwitch, "0000:1a:00.0": system.DistCrossSocket, "0000:3a:00.0": system.DistSameSwitch}[nic]
	}
	for _, tc := range []struct {
		device, gpu, want, dist string
	}{
		{"", "0000:99:00.0", "mlx5_2", system.DistSameSwitch}, // nearest active port
		{"", "", "mlx5_0", ""},                                // no GPU: the first active port
		{"mlx5_1", "0000:99:00.0", "mlx5_1", system.DistSameSwitch},
	} {
		n, d, ok := PickNIC(nics, tc.device, tc.gpu, dist)
		if !ok || n.Name != tc.want || d != tc.dist {
			t.Errorf("device %q gpu %q: %s %q %v, want %s %q", tc.device, tc.gpu, n.Name, d, ok, tc.want, tc.dist)
		}
	}
	if _, _, ok := PickNIC(nics, "mlx5_9", "", dist); ok {
		t.Error("a device that does not exist was picked")
	}
}
