package bench

import (
	"context"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/kvtier/kvtier/harness"
	"github.com/kvtier/kvtier/harness/transfer"
	"github.com/kvtier/kvtier/rdma"
	"github.com/kvtier/kvtier/results"
	"github.com/kvtier/kvtier/tiers"
	"github.com/kvtier/kvtier/units"
	"github.com/kvtier/kvtier/xfer"
)

// transferConfig is the environment's configuration of BenchmarkTransfer.
type transferConfig struct {
	opts  xfer.Options
	peers []string // "" is an embedded loopback peer
}

// loadTransferConfig reads KVTIER_PEERS, KVTIER_SIZES, KVTIER_LAYOUTS,
// KVTIER_TRANSPORT, KVTIER_CONNS, KVTIER_MODEL and KVTIER_TOKEN over
// kvtier transfer's defaults (KVTIER_RDMA_DEVICE and KVTIER_LIBIBVERBS
// are read where the backends open).
func loadTransferConfig() (transferConfig, error) {
	c := transferConfig{opts: xfer.DefaultOptions()}
	o := &c.opts
	var err error
	if o.Sizes, err = units.ParseList(env("KVTIER_SIZES", "16MiB,256MiB"), units.ParseBytes); err != nil {
		return c, fmt.Errorf("KVTIER_SIZES: %w", err)
	}
	if l := env("KVTIER_LAYOUTS", ""); l != "" {
		o.Layouts = strings.Split(l, ",")
	}
	o.Transport = env("KVTIER_TRANSPORT", o.Transport)
	if o.Conns, err = strconv.Atoi(env("KVTIER_CONNS", strconv.Itoa(o.Conns))); err != nil {
		return c, fmt.Errorf("KVTIER_CONNS: %w", err)
	}
	if o.Geometry, err = loadModel(); err != nil {
		return c, err
	}
	o.Token = os.Getenv("KVTIER_TOKEN")
	if p := env("KVTIER_PEERS", ""); p != "" {
		c.peers = strings.Split(p, ",")
		o.Peers = c.peers
	} else {
		c.peers = []string{""}
	}
	return c, o.Validate()
}

// BenchmarkTransfer is MB2 (kvtier transfer) as Go benchmarks: reads of
// each layout and size from each peer of KVTIER_PEERS (an embedded
// loopback peer when unset), named peer=ADDR/layout=L/size=S. Each peer
// is labelled as kvtier transfer labels it (the path line: intra for
// another process on this host, inter for another host, loopback for
// the embedded peer). The time of one op is the Sampler's mean over b.N
// samples after a verified one, as in transfer.csv.
func BenchmarkTransfer(b *testing.B) {
	c, err := loadTransferConfig()
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	be, closeBe, err := xfer.OpenBackends(ctx, c.opts, tiers.BackendConfig{NUMA: -1, Log: os.Stderr})
	if err != nil {
		b.Fatal(err)
	}
	defer closeBe()
	be.RDMA = rdma.Config{Device: env("KVTIER_RDMA_DEVICE", ""), GIDIndex: -1, Root: "/", Library: env("KVTIER_LIBIBVERBS", "")}
	printRunLabels(c.opts.Geometry, be.Dst)
	for _, addr := range c.peers {
		name := addr
		if name == "" {
			name = "embedded"
		}
		b.Run("peer="+name, func(b *testing.B) { benchPeer(b, c, be, addr) })
	}
}

// benchPeer runs every layout and size against the peer at addr.
func benchPeer(b *testing.B, c transferConfig, be xfer.Backends, addr string) {
	ctx := context.Background()
	s := &harness.Sampler{Suite: transfer.Suite.Name}
	m := xfer.NewMeasurer(c.opts, be, s, os.Stderr)
	t, done, err := m.Dial(ctx, addr)
	if err != nil {
		b.Skipf("peer %s: %v", addr, err)
	}
	defer done()
	for _, layout := range c.opts.Layouts {
		for _, size := range c.opts.Sizes {
			b.Run(fmt.Sprintf("layout=%s/size=%s", layout, strings.ReplaceAll(units.FormatBytes(size), " ", "")), func(b *testing.B) {
				benchTransfer(b, m, s, t, layout, size)
			})
		}
	}
}

// benchTransfer measures one layout and size: b.N samples after a
// verified warm-up, reported as their mean.
func benchTransfer(b *testing.B, m *xfer.Measurer, s *harness.Sampler, t *xfer.Target, layout string, size int64) {
	var rows []results.Row
	s.Sink = sinkFunc(func(r results.Row) error { rows = append(rows, r); return nil })
	s.Policy = harness.Policy{Warmup: 1, Reps: b.N}
	b.ResetTimer()
	if _, err := m.Config(context.Background(), t, layout, size); err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	var sum float64
	for _, r := range rows {
		if r.Status != results.StatusOK {
			b.Skipf("%s: %s", r.Status, r.Reason)
		}
		sum += r.Seconds
	}
	if len(rows) == 0 {
		b.Fatal("no samples")
	}
	mean := sum / float64(len(rows))
	printRowLabels(rows[0])
	b.ReportMetric(mean*1e9, "ns/op")
	b.ReportMetric(float64(size)/mean/1e6, "MB/s")
	b.ReportMetric(roundTo(float64(size)/mean/1e9, 4), "GB/s")
}

// roundTo rounds x to n significant digits.
func roundTo(x float64, n int) float64 {
	if x == 0 || math.IsNaN(x) || math.IsInf(x, 0) {
		return x
	}
	p := math.Pow(10, float64(n)-math.Ceil(math.Log10(math.Abs(x))))
	return math.Round(x*p) / p
}
