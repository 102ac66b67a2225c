package analysis

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/kvtier/kvtier/results"
)

// synthSweep writes rows whose times follow the tier models exactly, times
// a small relative noise.
func synthSweep(noise float64, seed uint64) []results.Row {
	const blockTokens, blockBytes = 16, 1572864
	rng := rand.New(rand.NewPCG(seed, 1))
	var rows []results.Row
	add := func(tier string, L int64, t float64, flops float64) {
		for rep := range 8 {
			r := results.NewRow("sweep")
			r.Backend, r.Transport, r.Tier, r.Layout = "cuda", "cuda", tier, "layerwise"
			r.PrefixTokens, r.Blocks, r.Rep = L, (L+blockTokens-1)/blockTokens, rep
			if tier != "recompute" {
				r.Bytes = r.Blocks * blockBytes
				r.Set("copy", "batch")
			} else {
				r.Layout = ""
				r.Set("flops", flops)
			}
			r.SetTime(t * (1 + noise*rng.NormFloat64()))
			rows = append(rows, r)
		}
	}
	for _, L := range []int64{512, 1024, 2048, 4096, 8192, 16384} {
		blocks := float64((L + blockTokens - 1) / blockTokens)
		add("host", L, 0.5e-3+blocks*blockBytes/25e9, 0)
		f := 6.6e9*float64(L) + 393216*float64(L)*float64(L)
		add("recompute", L, 1e-3+f/100e12, f)
	}
	return rows
}

func TestFitRecoversModel(t *testing.T) {
	t.Parallel()
	fits, skipped := Fits(synthSweep(0.005, 7))
	if len(skipped) != 0 {
		t.Fatalf("skipped: %q", skipped)
	}
	want := map[string][2]float64{"host": {0.5e-3, 25e9}, "recompute": {1e-3, 100e12}}
	for _, f := range fits {
		w := want[f.Key.Tier]
		if d := math.Abs(f.Alpha/w[0] - 1); d > 0.02 {
			t.Errorf("%s: alpha = %g, want %g (off %.1f%%)", f.Key.Tier, f.Alpha, w[0], 100*d)
		}
		if d := math.Abs(f.Rate/w[1] - 1); d > 0.02 {
			t.Errorf("%s: rate = %g, want %g (off %.1f%%)", f.Key.Tier, f.Rate, w[1], 100*d)
		}
		if f.R2 < 0.99 {
			t.Errorf("%s: R² = %g", f.Key.Tier, f.R2)
		}
		if f.Key.Tier == "recompute" {
			if math.Abs(f.FlopsA/6.6e9-1) > 1e-6 || math.Abs(f.FlopsB/393216-1) > 1e-6 {
				t.Errorf("flops(L) = %g·L + %g·L², want 6.6e9·L + 393216·L²", f.FlopsA, f.FlopsB)
			}
		} else if f.BlockTokens != 16 || f.BlockBytes != 1572864 {
			t.Errorf("block geometry %d tokens, %g bytes", f.BlockTokens, f.BlockBytes)
		}
	}
}

func TestBreakEven(t *testing.T) {
	t.Parallel()
	fits, _ := Fits(synthSweep(0.002, 8))
	bes := BreakEvens(fits)
	if len(bes) != 1 {
		t.Fatalf("%d break-evens, want 1", len(bes))
	}
	b := bes[0]
	// By hand at the shortest L, 512: recompute 1e-3 + (6.6e9·512 +
	// 393216·512²)/1e14 = 35.8 ms; host 0.5e-3 + 32·1572864/25e9 = 2.5 ms.
	// Recompute grows faster than the fetch, so it never catches up.
	if b.Kind != FetchWins {
		t.Errorf("break-even = %v, want fetch cheaper at every L", b)
	}

	// A fast recompute and a slow link: recompute wins below L*.
	host := Fit{Regressor: "bytes", Alpha: 2e-3, Rate: 1e9, BlockTokens: 16, BlockBytes: 16000, MinL: 16, MaxL: 65536}
	rc := Fit{Regressor: "flops", Alpha: 0, Rate: 1e12, FlopsA: 0, FlopsB: 1e3, MinL: 16, MaxL: 65536}
	// host(L) = 2e-3 + 1000·ceil(L/16)·16/1e9 ≈ 2e-3 + 1e-6·L (exact at multiples of 16)
	// rc(L)   = 1e3·L²/1e12 = 1e-9·L²
	// 1e-9 L² = 2e-3 + 1e-6 L  →  L² - 1000 L - 2e6 = 0  →  L = (1000 + sqrt(1e6 + 8e6))/2 = 2000.
	got := BreakEvenOf(rc, host)
	if got.Kind != Crossover {
		t.Fatalf("kind = %v, want a crossover", got)
	}
	// At L = 2000 (a multiple of 16) both cost 4 ms exactly; just below,
	// the fetch is ceil'd up to the next block, so recompute stays cheaper
	// until 2000.
	if got.L != 2000 {
		t.Errorf("break-even L = %d, want 2000", got.L)
	}
	if s := got.String(); s != "2000 tokens" {
		t.Errorf("String = %q", s)
	}
	rc.FlopsB = 1e-3 // recompute almost free: never crosses
	if got := BreakEvenOf(rc, host); got.Kind != RecomputeWins {
		t.Errorf("cheap recompute: %v, want never within the measured range", got)
	}
}

func TestFitNeedsTwoSizes(t *testing.T) {
	t.Parallel()
	r := results.NewRow("sweep")
	r.Backend, r.Tier, r.PrefixTokens, r.Blocks, r.Bytes = "cuda", "host", 1024, 64, 64*1572864
	r.SetTime(1e-3)
	fits, skipped := Fits([]results.Row{r, r})
	if len(fits) != 0 || len(skipped) != 1 {
		t.Errorf("fits %d, skipped %q; want one skipped", len(fits), skipped)
	}
}

func TestFitSaysWhyNot(t *testing.T) {
	t.Parallel()
	r := results.NewRow("sweep")
	r.Backend, r.Tier, r.PrefixTokens = "host", "recompute", 1024
	r.SetTime(1) // ok, but no flops column
	s := results.NewRow("sweep")
	s.Backend, s.Tier, s.PrefixTokens = "host", "hbm", 1024
	s.Skip("no GPU")
	_, skipped := Fits([]results.Row{r, s})
	want := []string{"recompute (host stand-in (CPU)): 1 ok rows but none with a positive flops column", "hbm (host stand-in (CPU)): no ok rows"}
	if len(skipped) != 2 || skipped[0] != want[1] || skipped[1] != want[0] {
		t.Errorf("skipped = %q, want %q", skipped, want)
	}
}

// TestSweepKeySync: a disk store that waits for fdatasync is its own
// configuration, labelled so, and one that waits for nothing keys as
// before. make bench's store sweep pooled the two into one summary row
// (n=4), and the report's "fastest configuration" was their mix.
func TestSweepKeySync(t *testing.T) {
	t.Parallel()
	row := func(sync string) results.Row {
		r := results.NewRow("sweep")
		r.Backend, r.Transport, r.Tier, r.Layout = "host", "uring", "disk", "layerwise"
		r.Set(results.DirectionColumn, results.DirectionStore)
		if sync != "" {
			r.Set(ColSync, sync)
		}
		return r
	}
	plain, none, durable := SweepKeyOf(row("")), SweepKeyOf(row("none")), SweepKeyOf(row("fdatasync"))
	for _, c := range []struct {
		name string
		ok   bool
	}{
		{"none keys as a row without the column", plain == none},
		{"fdatasync is its own configuration", durable != none && CompareSweepKeys(durable, none) != 0},
		{"the label says fdatasync", strings.Contains(durable.Label(), "fdatasync") && !strings.Contains(none.Label(), "none")},
		{"the short label says fdatasync", strings.Contains(durable.Short(), "fdatasync")},
	} {
		if !c.ok {
			t.Errorf("%s: none %+v, fdatasync %+v", c.name, none, durable)
		}
	}
}
