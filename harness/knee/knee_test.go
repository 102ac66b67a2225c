package knee

import (
	"context"
	"math"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/kvtier/kvtier/analysis"
	"github.com/kvtier/kvtier/internal/syncbuf"
	"github.com/kvtier/kvtier/kv"
	"github.com/kvtier/kvtier/replayer"
	"github.com/kvtier/kvtier/results"
	"github.com/kvtier/kvtier/results/resultstest"
	"github.com/kvtier/kvtier/serving"
	"github.com/kvtier/kvtier/vllmsim"
	"github.com/kvtier/kvtier/workload"
)

// referenceWorkload is the knee workload of the reference, the default
// sessions of replay and knee (replayer.DefaultSessions), their tokens
// drawn from seed.
func referenceWorkload(t *testing.T, seed uint64) *replayer.Workload {
	t.Helper()
	o := replayer.DefaultSessions()
	o.Seed = seed
	w, err := replayer.Generate(context.Background(), o, 0)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// referenceGB are the reference's capacities (docs/reference.md).
var referenceGB = func() []float64 {
	var gb []float64
	for _, k := range analysis.ReferenceKnee {
		gb = append(gb, k.GB)
	}
	return gb
}()

func blocksOf(gb []float64, blockBytes int64) []int {
	var out []int
	for _, g := range gb {
		out = append(out, int(g*1e9/float64(blockBytes)))
	}
	return out
}

// embeddedSweep sweeps capacities (GB) with the reference's knee workload
// on embedded simulators on the virtual clock, the simulator and the
// replay, and the workload's tokens, seeded with seed; it returns the
// capacity rows.
func embeddedSweep(t *testing.T, gb []float64, seed uint64) []results.Row {
	t.Helper()
	g, _ := kv.LookupModel(kv.DefaultModel)
	w := referenceWorkload(t, seed)
	var rows []results.Row
	synctest.Test(t, func(t *testing.T) {
		var net vllmsim.MemNet
		defer net.Close()
		cfg := Config{
			Capacities: blocksOf(gb, g.BlockBytes()), BlockSize: 16, BytesPerToken: g.BytesPerToken(),
			Sim: vllmsim.Config{TimeScale: 1, Seed: int64(seed), EnablePromptTokensDetails: true}, Net: &net,
			HealthTimeout: time.Minute, Grace: time.Second,
			Replay: replayer.Config{Dispatch: replayer.DispatchSession, Concurrency: 4, Speedup: 1, Timeout: 10 * time.Minute, HTTP: net.Client(), Seed: seed},
		}
		var reqs, caps, curve resultstest.Sink
		if err := Run(context.Background(), cfg, w, Sinks{Requests: &reqs, Capacities: &caps, Curve: &curve}); err != nil {
			t.Fatal(err)
		}
		if reqs.Len() != len(gb)*len(w.Requests) || curve.Len() < 100 {
			t.Errorf("%d request rows, %d curve rows", reqs.Len(), curve.Len())
		}
		rows = caps.Rows()
	})
	return rows
}

// kneeTolerance is how far each of the simulator's knee figures may be
// from the reference's: 25 %.
const kneeTolerance = 0.25

// unreproducible is the one reference figure the simulator cannot
// reproduce (docs/reference.md, "What the simulator matches"): the TTFT
// p90 at 3.6 GB, 0.53 s, below the reference's own 0.65 s at 9.7 and
// 14.5 GB. At or above the working set the simulator serves the same
// schedule at every capacity, so its TTFT p90 at 3.6 GB is its plateau's,
// which must also be within 25 % of 0.65 s.
var unreproducible = struct {
	gb  float64
	col string
}{3.6, results.ColTTFTP90}

// TestKneeEmbeddedReference sweeps the reference's capacities with its
// knee workload on embedded simulators (virtual time) and checks the
// reference's shape, and its realized APC and TTFT p90 within 25 % at
// every capacity but the one figure it cannot reproduce (unreproducible),
// which must be the simulator's plateau.
func TestKneeEmbeddedReference(t *testing.T) {
	if raceDetector {
		t.Skip("120 requests of up to 9.6k tokens take 20 s under the race detector; make test runs this without it")
	}
	t.Parallel()
	rows := embeddedSweep(t, referenceGB, 1)
	for i, r := range rows {
		ref := analysis.ReferenceKnee[i]
		t.Logf("%.1f GB (%s blocks): %s %s APC %.1f %% (reference %.1f %%, predicted %.1f %%), TTFT p50 %.3f p90 %.3f s (reference %.2f s, %+.0f %%) p99 %.3f s, working set %.2f GB", ref.GB, r.Get("gpu_blocks"), r.Status, r.Reason,
			100*r.Float("apc"), 100*ref.APC, 100*r.Float("predicted_apc"), r.Float("ttft_p50_s"), r.Float("ttft_p90_s"), ref.TTFTP90, 100*(r.Float("ttft_p90_s")/ref.TTFTP90-1), r.Float("ttft_p99_s"), r.Float("working_set_bytes")/1e9)
		if r.Get("simulated") != "true" || r.Get("server") != EmbeddedName {
			t.Errorf("row not marked simulated: %v", r.Extra)
		}
		if ref.GB >= 3.6 && math.Abs(r.Float("apc")-ref.APC) > 0.10 {
			t.Errorf("%.1f GB: realized APC %.1f %%, reference %.1f %%: more than 10 points apart at or above the knee", ref.GB, 100*r.Float("apc"), 100*ref.APC)
		}
		for _, f := range []struct {
			col  string
			want float64
		}{{results.ColAPC, ref.APC}, {results.ColTTFTP90, ref.TTFTP90}} {
			off := r.Float(f.col)/f.want - 1
			if ref.GB == unreproducible.gb && f.col == unreproducible.col {
				if plateau := rows[len(rows)-1].Float(f.col); math.Abs(r.Float(f.col)/plateau-1) > 0.01 {
					t.Errorf("%.1f GB: %s %.3f, not the plateau's %.3f: the reason it cannot match the reference no longer holds", ref.GB, f.col, r.Float(f.col), plateau)
				}
				t.Logf("%.1f GB: %s %+.0f %% off the reference (its plateau's; not reproducible)", ref.GB, f.col, 100*off)
				continue
			}
			if math.Abs(off) > kneeTolerance {
				t.Errorf("%.1f GB: %s %.3f, reference %.3f: off %+.0f %%, more than 25 %%", ref.GB, f.col, r.Float(f.col), f.want, 100*off)
			}
		}
	}
	checkShape(t, rows)
}

// TestKneeEmbeddedReferenceSeeds runs the capacity below the knee, where
// LRU eviction under load decides what hits, with 5 seeds (the
// simulator's, the replay's and the prompts' tokens) on the virtual
// clock: the realized APC may move at most 5 points between them. (It
// moved 8 to 10 points, also between runs of one seed, when requests
// reaching the simulator at the same instant queued in whatever order
// their handlers ran.)
func TestKneeEmbeddedReferenceSeeds(t *testing.T) {
	if raceDetector {
		t.Skip("five sweeps of 24 requests of up to 9.5k tokens: make test runs this without the race detector")
	}
	t.Parallel()
	var apc []float64
	for seed := range uint64(5) {
		r := embeddedSweep(t, referenceGB[1:2], seed+1)[0]
		apc = append(apc, r.Float("apc"))
		t.Logf("seed %d: %.1f GB: APC %.1f %%, TTFT p90 %.3f s", seed+1, referenceGB[1], 100*r.Float("apc"), r.Float("ttft_p90_s"))
	}
	if spread := slices.Max(apc) - slices.Min(apc); spread > 0.05 {
		t.Errorf("realized APC at %.1f GB over 5 seeds: %.3f, spread %.1f points: want at most 5", referenceGB[1], apc, 100*spread)
	}
}

// checkShape checks the reference's shape: realized APC at the largest
// capacity at least twice the smallest's, TTFT p90 falling at least 5×
// across the knee and flat (±25 %) beyond it, the knee within one
// capacity step of the working set.
func checkShape(t *testing.T, rows []results.Row) {
	t.Helper()
	k, err := ShapeOfKnee(rows)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("APC gain %.2f×, TTFT p90 fall %.2f×, flat within ±%.0f %%, knee at capacity %d, working set nearest %d", k.APCGain, k.TTFTFall, 100*k.Flat, k.Knee, k.WorkingSet)
	if !(k.APCGain >= 2) {
		t.Errorf("realized APC at the largest capacity %.2f× the smallest's: want at least 2×", k.APCGain)
	}
	if !(k.TTFTFall >= 5) {
		t.Errorf("TTFT p90 falls %.2f× across the knee: want at least 5×", k.TTFTFall)
	}
	if !(k.Flat <= 0.25) {
		t.Errorf("TTFT p90 beyond the knee moves %.0f %% from the knee's: want within ±25 %%", 100*k.Flat)
	}
	if k.WorkingSet < 0 || k.Knee-k.WorkingSet > 1 || k.WorkingSet-k.Knee > 1 {
		t.Errorf("knee at capacity %d, the working set nearest capacity %d: want at most one step apart", k.Knee, k.WorkingSet)
	}
}

// TestKneeEmbeddedSmall runs a small sweep on embedded simulators under
// the race detector too: three capacities, the realized APC rising to
// the LRU model's at the working set and flat beyond it, rows of every
// kind written. The simulator counts each request's lookup once, as vLLM
// after 0.18.1: h20's count of every lookup of a waiting request (which
// at the working set, where turns wait for blocks with their context
// cached, reads above the LRU model, as the reference's 3.6 GB cell) is
// TestKneeEmbeddedReference's.
func TestKneeEmbeddedSmall(t *testing.T) {
	t.Parallel()
	once, err := vllmsim.LookupProfile("h20")
	if err != nil {
		t.Fatal(err)
	}
	once.CountEveryAttempt = false
	w, err := replayer.Generate(context.Background(), workload.GenOptions{Sessions: 3, Turns: 3, SystemTokens: 256, TurnTokens: 128, OutputTokens: 8, BlockTokens: 16, Seed: 1, Fixed: true}, 0)
	if err != nil {
		t.Fatal(err)
	}
	ws, _ := w.WorkingSet(replayer.DispatchSession, 0)
	caps := []int{int(ws/16) / 2, int(ws / 16), int(ws/16) * 2}
	synctest.Test(t, func(t *testing.T) {
		var net vllmsim.MemNet
		defer net.Close()
		cfg := Config{
			Capacities: caps, BlockSize: 16, Sim: vllmsim.Config{TimeScale: 1, Profile: once}, Net: &net, HealthTimeout: time.Minute, Grace: time.Second,
			Replay: replayer.Config{Dispatch: replayer.DispatchSession, Speedup: 1, Timeout: time.Minute, HTTP: net.Client()},
			Log:    &syncbuf.Buffer{},
		}
		var reqs, rows, curve resultstest.Sink
		if err := Run(context.Background(), cfg, w, Sinks{Requests: &reqs, Capacities: &rows, Curve: &curve}); err != nil {
			t.Fatal(err)
		}
		// Progress lines carry the command's prefix, as every suite's do.
		log := cfg.Log.(*syncbuf.Buffer).String()
		for l := range strings.Lines(log) {
			if !strings.HasPrefix(l, "kvtier knee: ") {
				t.Errorf("progress line %q lacks the prefix \"kvtier knee: \"", l)
			}
		}
		if log == "" {
			t.Error("no progress lines")
		}
		if rows.Len() != 3 || reqs.Len() != 3*len(w.Requests) || curve.Len() == 0 {
			t.Fatalf("%d capacity rows, %d request rows, %d curve rows", rows.Len(), reqs.Len(), curve.Len())
		}
		for _, r := range reqs.Rows() {
			if r.Suite != Suite.Name || r.Get("server") != EmbeddedName || r.Status != results.StatusOK {
				t.Fatalf("request row %s %s %q %v", r.Suite, r.Status, r.Reason, r.Extra)
			}
		}
		capRows := rows.Rows()
		a := func(i int) float64 { return capRows[i].Float("apc") }
		if !(a(0) < a(1)) || math.Abs(a(1)-a(2)) > 0.01 || math.Abs(a(1)-capRows[1].Float("predicted_apc")) > 0.05 {
			t.Errorf("realized APC %.3f %.3f %.3f (predicted at the working set %.3f)", a(0), a(1), a(2), capRows[1].Float("predicted_apc"))
		}
	})
}

// The progress says "replayed" only of a capacity whose requests were
// answered: a refusal, an interruption or a run with none answered says
// what happened instead.
func TestOutcomeSaysWhatHappened(t *testing.T) {
	t.Parallel()
	ok := func(okN, reqs string) results.Row {
		r := results.NewRow(Suite.Name)
		r.Status = results.StatusOK
		r.Set("ok", okN)
		r.Set("requests", reqs)
		return r
	}
	for _, tt := range []struct {
		row  results.Row
		err  error
		want string
	}{
		{ok("6", "6"), nil, "replayed: 6 of 6 requests answered"},
		{ok("0", "6"), nil, "nothing replayed"},
		{results.NewRow(Suite.Name), &noPoolError{family: serving.Family{Name: "ollama"}, why: "no pool"}, "refused: no KV capacity to sweep"},
		{results.NewRow(Suite.Name), context.Canceled, "stopped: context canceled"},
	} {
		if got := outcome(tt.row, tt.err); !strings.HasPrefix(got, tt.want) {
			t.Errorf("outcome(%v, %v) = %q, want %q", tt.row.Extra, tt.err, got, tt.want)
		}
	}
}
