// Package reporttest writes synthetic kvtier results directories for the
// tests of the analysis packages: every suite's CSV with values shaped
// like an H200 node's (and the host stand-in's), a manifest, and the
// skipped, error and unverified rows a real run has.
package reporttest

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kvtier/kvtier/results"
)

// Options say what to generate.
type Options struct {
	Seed   uint64
	Reps   int                // samples per configuration (default 5)
	Noise  float64            // relative spread of the samples (default 0.03)
	Slow   map[string]float64 // sweep tier -> factor its times are multiplied by
	Suites []string           // files to write (default Default)
	// Small limits the sweep to the host tier (one cuda configuration and
	// the stand-in), for tests that draw and must stay quick under -race.
	Small bool
	// Disk adds DiskTier to the sweep.
	Disk bool
}

// Default are the files WriteDir writes unless told: the device,
// serving and transfer suites. Everything adds a trace's figures and a
// plan.

// The files reporttest writes, by the names their suites register. The
// suites' packages are not imported here, so that this helper stays
// below them: a test that uses it imports the suites whose files it
// writes, which registers their columns (columns).
const (
	sweepFile    = "sweep.csv"
	probeFile    = "probe.csv"
	mb1File      = "mb1.csv"
	tokensFile   = "mb1_tokens.csv"
	transferFile = "transfer.csv"
	meshFile     = "mesh.csv"
	traceFile    = "trace.csv"
	planFile     = "plan.csv"
	traceBackend = "trace"
)

// columns returns the registered columns of file of suite; it panics
// when the test did not import the suite's package, naming it.
func columns(suite, file string) []string {
	s, ok := results.LookupSuite(suite)
	if ok {
		for _, f := range s.Files {
			if f.Name == file {
				return f.Names()
			}
		}
	}
	panic("reporttest: " + file + " of suite " + suite + " is not registered: import the suite's package in the test")
}

var (
	Default    = []string{sweepFile, probeFile, mb1File, tokensFile, transferFile, meshFile}
	Everything = append(append([]string{}, Default...), traceFile, planFile)
)

// Geometry of the synthetic model: Qwen3-Coder-30B-A3B, 16-token blocks.
const (
	BlockTokens = 16
	BlockBytes  = 1572864 // 16 tokens × 96 KiB
	ChunkBytes  = 16384
)

// Tier models of the synthetic cuda sweep: t = Alpha + bytes/Beta.
var (
	Tiers = []tierModel{
		{"hbm", "layerwise", "batch", "cuda", "", 12e-6, 1.6e12, 0},
		{"host", "layerwise", "batch", "cuda", "", 25e-6, 50e9, 0},
		{"host", "blockwise", "percopy", "cuda", "", 18e-6, 53e9, 0},
		{"remote", "layerwise", "batch", "verbs", "inter", 60e-6, 20e9, 0},
	}
	// DiskTier is the disk tier as make bench runs it, its file capped:
	// written with Options.Disk.
	DiskTier = tierModel{"disk", "layerwise", "percopy", "uring", "o_direct+bounce", 90e-6, 6e9, 4096}
	Prefixes = []int64{1024, 4096, 16384, 65536}
)

// A tierModel is one configuration of the synthetic sweep.
type tierModel struct {
	Tier, Layout, Copy, Transport, Path string
	Alpha, Beta                         float64 // s, bytes/s
	MaxL                                int64   // longer prefixes are skipped rows; 0: none
}

// Recompute model of the synthetic sweep: t = RecomputeAlpha +
// Flops(L)/RecomputeRate, Flops(L) = FlopsA·L + FlopsB·L².
const (
	RecomputeAlpha float64 = 2e-3    // s
	RecomputeRate  float64 = 400e12  // FLOP/s
	FlopsA         float64 = 6.6e9   // FLOPs per token
	FlopsB         float64 = 393216. // FLOPs per token² (attention)
)

// Bytes returns the payload of an L-token prefix.
func Bytes(L int64) int64 { return (L + BlockTokens - 1) / BlockTokens * BlockBytes }

// Flops returns the prefill FLOPs of L tokens.
func Flops(L int64) float64 { return FlopsA*float64(L) + FlopsB*float64(L)*float64(L) }

// TempDir writes a results directory into a fresh temporary directory of
// t and returns its path; a directory that cannot be written fails t.
func TempDir(t testing.TB, o Options) string {
	t.Helper()
	dir := t.TempDir()
	if err := WriteDir(dir, o); err != nil {
		t.Fatal(err)
	}
	return dir
}

// WriteDir writes a results directory into dir.
func WriteDir(dir string, o Options) error {
	if o.Reps == 0 {
		o.Reps = 5
	}
	if o.Noise == 0 {
		o.Noise = 0.03
	}
	if o.Suites == nil {
		o.Suites = Default
	}
	rng := rand.New(rand.NewPCG(o.Seed, o.Seed^0x9e3779b97f4a7c15))
	noise := func() float64 { return math.Exp(o.Noise * rng.NormFloat64()) }
	w := writer{dir: dir}
	for _, s := range o.Suites {
		switch s {
		case sweepFile:
			w.sweep(o, noise)
		case probeFile:
			w.probe(o, noise)
		case mb1File:
			w.mb1(o, noise)
		case tokensFile:
			w.tokens()
		case transferFile:
			w.transfer(o, noise)
		case traceFile:
			w.trace()
		case planFile:
			w.plan()
		case meshFile:
			w.mesh(o)
		default:
			return fmt.Errorf("reporttest: unknown suite file %q", s)
		}
	}
	if w.err != nil {
		return w.err
	}
	return results.WriteManifest(filepath.Join(dir, "manifest.json"), Manifest())
}

// Tree is how make bench lays out its results: one directory per suite
// (its name) with the suite's files and a manifest of its own.
var Tree = []struct {
	Suite string
	Files []string
}{
	{"sweep", []string{sweepFile}}, {"transfer", []string{transferFile}}, {"probe", []string{probeFile}},
	{"mb1", []string{mb1File, tokensFile}}, {"mesh", []string{meshFile}}, {"trace", []string{traceFile}},
	{"plan", []string{planFile}},
}

// WriteTree writes a results tree as make bench does into root and
// returns its directories: every suite of Tree, each run a minute after
// the one before.
func WriteTree(root string, o Options) ([]string, error) {
	var dirs []string
	for i, t := range Tree {
		dir := filepath.Join(root, t.Suite)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return dirs, err
		}
		o.Suites = t.Files
		if err := WriteDir(dir, o); err != nil {
			return dirs, err
		}
		m := Manifest()
		m.Suite = t.Suite
		s, _ := results.LookupSuite(t.Suite)
		m.Command = append(strings.Fields(s.Command), "--out", dir)
		m.Start = m.Start.Add(time.Duration(i) * time.Minute)
		m.End = m.Start.Add(30 * time.Second)
		if err := results.WriteManifest(filepath.Join(dir, "manifest.json"), m); err != nil {
			return dirs, err
		}
		dirs = append(dirs, dir)
	}
	return dirs, nil
}

// Manifest returns a plausible manifest of an H200 node.
func Manifest() *results.Manifest {
	start := time.Date(2026, 11, 29, 22, 0, 0, 0, time.UTC)
	return &results.Manifest{
		Tool: "kvtier", Version: "abc1234", Command: []string{"kvtier", "sweep", "--prefix", "1k,4k,16k,64k"},
		Suite: "sweep", Start: start, End: start.Add(95 * time.Second),
		Host: results.Host{Hostname: "gpu-node-7", Kernel: "6.8.0", OS: "linux", Arch: "amd64",
			CPUModel: "Intel Xeon Platinum 8468", CPUs: 192, NUMANodes: 2, MemoryBytes: 2 << 40, GoVersion: "go1.26.0"},
		Backends: []results.BackendStatus{
			{Name: "host", Available: true},
			{Name: "cuda", Available: true, Detail: "libcuda.so.1 570.86"},
			{Name: "verbs", Available: false, Reason: "libibverbs.so.1: cannot open shared object file"},
		},
		GPUs: []results.GPU{{Index: 0, Name: "NVIDIA H200", BusID: "0000:19:00.0", NUMANode: 0, MemoryBytes: 141 << 30,
			DriverVersion: "570.86", CUDAVersion: "12.8", PCIeGen: 5, PCIeWidth: 16, PCIeMaxGen: 5, PCIeMaxWidth: 16, LinkGBps: 53.2}},
		NICs: []results.NIC{{Name: "mlx5_0", Port: 1, State: "ACTIVE", LinkLayer: "Ethernet", MTU: 4096, RateGbps: 200, NetDev: "ens1f0", NUMANode: 0}},
	}
}

type writer struct {
	dir string
	err error
}

func (w *writer) open(name string, cols []string) *results.CSV {
	if w.err != nil {
		return nil
	}
	c, err := results.CreateCSV(filepath.Join(w.dir, name), cols...)
	w.err = err
	return c
}

func (w *writer) put(c *results.CSV, r results.Row) {
	if w.err == nil && c != nil {
		w.err = c.Write(r)
	}
}

func (w *writer) close(c *results.CSV) {
	if c != nil {
		if err := c.Close(); w.err == nil {
			w.err = err
		}
	}
}

// sweepRow returns a sweep row of one configuration at L, rep.
func sweepRow(backend, transport, tier, layout string, L int64, rep int) results.Row {
	r := results.NewRow("sweep")
	r.Backend, r.Transport, r.Tier, r.Layout, r.Model = backend, transport, tier, layout, "qwen3-coder-30b-a3b"
	r.PrefixTokens, r.Blocks, r.ChunkBytes, r.Rep = L, (L+BlockTokens-1)/BlockTokens, ChunkBytes, rep
	return r
}

// slow returns the factor the times of tier are multiplied by.
func (o Options) slow(tier string) float64 {
	if f, ok := o.Slow[tier]; ok {
		return f
	}
	return 1
}

// tierRows writes the rows of one synthetic cuda configuration: a
// sample per prefix and rep, a skipped row per prefix past its MaxL.
func (w *writer) tierRows(c *results.CSV, tc tierModel, o Options, noise func() float64) {
	for _, L := range Prefixes {
		for rep := range o.Reps {
			r := sweepRow("cuda", tc.Transport, tc.Tier, tc.Layout, L, rep)
			r.Bytes = Bytes(L)
			r.Set("copy", tc.Copy)
			r.Set("path", tc.Path)
			if tc.MaxL > 0 && L > tc.MaxL {
				if rep == 0 {
					r.Skip(fmt.Sprintf("the file would exceed --disk-max 256MiB at %d tokens", L))
					w.put(c, r)
				}
				continue
			}
			r.Set("device", "NVIDIA H200 [0000:19:00.0]")
			r.Set("src_mem", map[string]string{"hbm": "device", "host": "pinned", "remote": "peer", "disk": "disk"}[tc.Tier])
			r.Set("dst_mem", "device")
			r.Set("timing", "events")
			r.Set("held", true)
			r.Set("verified", rep == 0)
			r.SetTime((tc.Alpha + float64(r.Bytes)/tc.Beta) * noise() * o.slow(tc.Tier))
			if tc.Tier == "host" {
				r.Set("link_gb_per_s", 53.2)
				r.Set("link_frac", r.GBps/53.2)
			}
			w.put(c, r)
		}
	}
}

func (w *writer) sweep(o Options, noise func() float64) {
	c := w.open(sweepFile, columns("sweep", sweepFile))
	defer w.close(c)
	base := sweepRow
	tiers := Tiers
	if o.Disk {
		tiers = append(slices.Clone(tiers), DiskTier)
	}
	for _, tc := range tiers {
		if !o.Small || (tc.Tier == "host" && tc.Copy == "batch") {
			w.tierRows(c, tc, o, noise)
		}
	}
	for _, L := range Prefixes {
		if o.Small {
			break
		}
		for rep := range o.Reps {
			r := base("cuda", "cublas", "recompute", "", L, rep)
			f := Flops(L)
			r.SetTime((RecomputeAlpha + f/RecomputeRate) * noise() * o.slow("recompute"))
			r.Set("device", "NVIDIA H200 [0000:19:00.0]")
			r.Set("flops", f)
			r.Set("tflops", f/r.Seconds/1e12)
			r.Set("compute_dtype", "bf16")
			r.Set("timing", "events")
			w.put(c, r)
		}
	}
	// The host stand-in: DRAM to DRAM copies, a CPU GEMM, and the tiers it
	// cannot run.
	for _, L := range Prefixes[:3] {
		for rep := range o.Reps {
			r := base("host", "memcpy", "host", "layerwise", L, rep)
			r.Bytes = Bytes(L)
			r.Set("device", "cpu (host stand-in)")
			r.Set("copy", "percopy")
			r.Set("src_mem", "pinned")
			r.Set("dst_mem", "pageable")
			r.Set("timing", "clock")
			r.SetTime((40e-6 + float64(r.Bytes)/9e9) * noise())
			w.put(c, r)
		}
		s := base("host", "memcpy", "hbm", "layerwise", L, 0)
		s.Skip("hbm tier needs a GPU backend: cuda unavailable (libcuda.so.1 not found)")
		w.put(c, s)
		e := base("host", "tcp", "remote", "layerwise", L, 0)
		e.Set("path", "loopback")
		e.Fail(fmt.Errorf("peer 127.0.0.1:7070: connection reset"))
		w.put(c, e)
	}
}

// Reference TTFT p50 (s) of the H20 table by L and tier.
var probeRef = map[int64]map[string]float64{
	8192:  {"miss": 0.588, "remote": 0.151, "cpu": 0.076, "gpu": 0.053},
	16384: {"miss": 1.547, "remote": 0.262, "cpu": 0.105, "gpu": 0.063},
	32768: {"miss": 4.604, "remote": 0.680, "cpu": 0.158, "gpu": 0.080},
	65536: {"miss": 15.23, "remote": 0.97, "cpu": 0.27, "gpu": 0.11},
}

func (w *writer) probe(o Options, noise func() float64) {
	c := w.open(probeFile, columns("probe", probeFile))
	defer w.close(c)
	ls := []int64{8192, 16384, 32768, 65536}
	for _, L := range ls {
		for _, tier := range []string{"miss", "remote", "cpu", "gpu"} {
			for rep := range 3 {
				r := results.NewRow("probe")
				r.Backend, r.Transport, r.Tier, r.Model = "http", "http", tier, "qwen3-coder-30b-a3b"
				r.PrefixTokens, r.Rep = L, rep
				r.Set("endpoint", "http://127.0.0.1:8000")
				r.Set("simulated", false)
				r.Set("http_status", 200)
				r.Set("prompt_tokens", L+16)
				r.Set("completion_tokens", 1)
				ttft := probeRef[L][tier] * noise()
				r.SetTime(ttft)
				r.Set("ttft_s", ttft)
				r.Set("e2e_s", ttft*1.01)
				r.Set("verified", true)
				if tier != "miss" {
					r.Set("cached_tokens", L)
					r.Set("hit_tokens", L)
				}
				if tier == "cpu" && L == 16384 && rep == 2 {
					r.Set("verified", false)
					r.Set("verify_reason", "external_prefix_cache_hits did not move")
				}
				w.put(c, r)
			}
		}
	}
	r := results.NewRow("probe")
	r.Backend, r.Transport, r.Tier, r.PrefixTokens = "http", "http", "remote", 131072
	r.Set("endpoint", "http://127.0.0.1:8000")
	r.Skip("no --producer: remote tier needs a second instance")
	w.put(c, r)
}

// MB1 reference cells: D, P, base TPOT, prefill TTFT, tokens/stream during.
var mb1Ref = []struct {
	D, P                 int
	base, ttft, perStrem float64
}{
	{1, 2048, 4.79e-3, 0.163, 4.0},
	{1, 32768, 4.78e-3, 4.515, 5.0},
	{8, 2048, 7.71e-3, 0.143, 4.5},
	{8, 32768, 7.42e-3, 4.520, 11.7},
}

func (w *writer) mb1(o Options, noise func() float64) {
	c := w.open(mb1File, columns("mb1", mb1File))
	defer w.close(c)
	for _, m := range mb1Ref {
		for _, arm := range []string{"interfere", "control"} {
			for rep := range 3 {
				r := results.NewRow("mb1")
				r.Backend, r.Transport, r.Model, r.Rep = "http", "http", "qwen3-coder-30b-a3b", rep
				r.Set("endpoint", "http://127.0.0.1:8000")
				r.Set("simulated", true)
				r.Set("arm", arm)
				r.Set("decode_streams", m.D)
				r.Set("prefill_tokens", m.P)
				r.Set("chunk_label", "8192")
				base := m.base * noise()
				ttft := m.ttft * noise()
				per := m.perStrem * noise()
				if arm == "control" {
					per = ttft / base * (0.97 + 0.04*float64(rep)/2)
				}
				eff := ttft / per
				r.SetTime(ttft)
				r.Set("base_tpot_s", base)
				r.Set("prefill_ttft_s", ttft)
				r.Set("tokens_during", per*float64(m.D))
				r.Set("tokens_per_stream_during", per)
				r.Set("eff_tpot_s", eff)
				r.Set("penalty", eff/base)
				r.Set("benefit_s", ttft-per*base)
				w.put(c, r)
			}
		}
	}
	r := results.NewRow("mb1")
	r.Backend, r.Transport = "http", "http"
	r.Set("arm", "interfere")
	r.Set("decode_streams", 16)
	r.Set("prefill_tokens", 131072)
	r.Fail(fmt.Errorf("server closed the stream mid-decode"))
	w.put(c, r)
}

func (w *writer) tokens() {
	if w.err != nil {
		return
	}
	c, err := results.OpenCSV(filepath.Join(w.dir, tokensFile), columns("mb1", tokensFile))
	if err != nil {
		w.err = err
		return
	}
	defer w.close(c)
	for _, m := range mb1Ref {
		if m.P != 32768 {
			continue
		}
		inject, done := 1.0, 1.0+m.ttft
		for s := range m.D {
			t := 0.2 + 0.0007*float64(s)
			for i := 0; t < done+0.5; i++ {
				r := results.Row{Suite: "mb1", Status: results.StatusOK, Rep: 0}
				for k, v := range map[string]any{"endpoint": "http://127.0.0.1:8000", "arm": "interfere", "decode_streams": m.D,
					"prefill_tokens": m.P, "stream": s, "index": i, "t_s": t, "inject_s": inject, "prefill_done_s": done} {
					r.Set(k, v)
				}
				if w.err = c.Write(r); w.err != nil {
					return
				}
				if t >= inject && t < done {
					t += m.ttft / m.perStrem
				} else {
					t += m.base
				}
			}
		}
	}
}

func (w *writer) transfer(o Options, noise func() float64) {
	c := w.open(transferFile, columns("transfer", transferFile))
	defer w.close(c)
	sizes := []int64{16 << 20, 64 << 20, 256 << 20, 1 << 30, 4 << 30}
	for _, path := range []string{"intra", "inter"} {
		for _, layout := range []string{"layerwise", "blockwise"} {
			for _, size := range sizes {
				for rep := range o.Reps {
					r := results.NewRow("transfer")
					r.Backend, r.Transport, r.Tier, r.Layout, r.Rep = "cuda", "verbs", "remote", layout, rep
					r.Bytes, r.ChunkBytes = size, ChunkBytes
					if layout == "blockwise" {
						r.ChunkBytes = BlockBytes
					}
					peak := map[string]float64{"intra": 9.7e9, "inter": 10.0e9}[path]
					if layout == "layerwise" {
						peak *= 0.8
					}
					sec := (30e-6 + float64(size)/peak) * noise()
					if rep == o.Reps-1 && size == 4<<30 {
						sec *= 5 // the tail the reference saw
					}
					r.SetTime(sec)
					r.Set("peer", "10.0.0.2:7070")
					r.Set("path", path)
					r.Set("device", "mlx5_0")
					r.Set("conns", 4)
					r.Set("src_mem", "gpu")
					r.Set("dst_mem", "gpu")
					r.Set("line_gb_per_s", 25)
					r.Set("line_frac", r.GBps/25)
					r.Set("t_3gib_s", 3*float64(1<<30)/(r.GBps*1e9))
					r.Set("t_11_5gib_s", 11.5*float64(1<<30)/(r.GBps*1e9))
					r.Set("verified", rep == 0)
					w.put(c, r)
				}
			}
		}
	}
	s := results.NewRow("transfer")
	s.Backend, s.Transport, s.Tier, s.Layout, s.Bytes = "cuda", "verbs", "remote", "contiguous", 16<<20
	s.Set("path", "intra")
	s.Skip("no second GPU for an intra-node peer")
	w.put(c, s)
}

// trace writes the figures of one synthetic trace: counts, the APC
// ceiling and its split, and the LRU knees of one and four instances.
func (w *writer) trace() {
	c := w.open(traceFile, columns("trace", traceFile))
	defer w.close(c)
	row := func(metric, stat string, v float64, unit string, predicted bool) results.Row {
		r := results.NewRow("trace")
		r.Backend, r.Model, r.Status = traceBackend, "qwen3-coder-30b-a3b", results.StatusOK
		for k, x := range map[string]any{"trace": "agentic.jsonl", "format": "mooncake", "block_tokens": 16, "metric": metric,
			"stat": stat, "value": v, "unit": unit, "predicted": predicted, "method": "exact", "sample_rate": 1, "touch": "reverse"} {
			r.Set(k, x)
		}
		return r
	}
	for _, m := range []struct {
		metric string
		v      float64
		unit   string
	}{{"requests", 850, "count"}, {"sessions", 120, "count"}, {"block_refs", 1.2e6, "count"}, {"distinct_blocks", 2.4e5, "count"},
		{"span", 780, "s"}, {"apc_ceiling_any", 0.803, "fraction"}, {"apc_ceiling_intra", 0.796, "fraction"},
		{"reuse_intra", 0.932, "fraction"}, {"reuse_cross", 0.057, "fraction"}, {"reuse_shared", 0.011, "fraction"}} {
		w.put(c, row(m.metric, "", m.v, m.unit, false))
	}
	for _, st := range []string{"mean", "p50", "p90", "p99", "max"} {
		for metric, v := range map[string]float64{"input_tokens": 33600, "output_tokens": 400, "kv_footprint": 3.3e9, "think": 4.5} {
			w.put(c, row(metric, st, v, "", false))
		}
	}
	for _, k := range []struct {
		instances int
		route     string
		knees     [4]int64 // at 50, 90, 95 and 99 % of the ceiling
	}{{1, "", [4]int64{90000, 190000, 230000, 260000}}, {4, "session", [4]int64{25000, 55000, 70000, 90000}}} {
		for i, name := range []string{"knee50", "knee90", "knee95", "knee99"} {
			blocks := k.knees[i]
			r := row(name, "", float64(blocks*BlockBytes), "bytes", true)
			r.Blocks, r.PrefixTokens, r.Bytes = blocks, blocks*BlockTokens, blocks*BlockBytes
			r.Set("instances", k.instances)
			r.Set("route", k.route)
			w.put(c, r)
		}
	}
}

// plan writes a plan over three HBM sizes and two DRAM sizes: the
// predicted TTFT falls with capacity and flattens past the working set.
func (w *writer) plan() {
	c := w.open(planFile, columns("plan", planFile))
	defer w.close(c)
	for _, dram := range []int64{0, 512 << 30} {
		for i, hbm := range []int64{40 << 30, 80 << 30, 160 << 30} {
			r := results.NewRow("plan")
			r.Backend, r.Model, r.Status = traceBackend, "qwen3-coder-30b-a3b", results.StatusOK
			hit := 0.5 + 0.1*float64(i)
			if dram > 0 {
				hit = 0.78
			}
			p90 := 0.2 + 4*(0.8-hit)
			for k, x := range map[string]any{"trace": "agentic.jsonl", "hbm_bytes": hbm, "dram_bytes": dram, "disk_bytes": 0,
				"remote_bytes": 0, "inclusive": false, "touch": "reverse", "hit_ratio": hit, "frac_hbm": hit * 0.8,
				"frac_dram": hit * 0.2, "frac_disk": 0, "frac_remote": 0, "frac_recompute": 1 - hit,
				"load_p50_s": 0.01, "load_p90_s": 0.05, "ttft_mean_s": p90 / 2, "ttft_p50_s": p90 / 3, "ttft_p90_s": p90,
				"ttft_p99_s": p90 * 2, "cost_source": "GPU measured", "costs": "sweep", "predicted": true} {
				r.Set(k, x)
			}
			r.Seconds = p90 / 3
			w.put(c, r)
		}
	}
}

// mesh writes a 4-rank mesh over two nodes (ranks 0, 1 on node-a, 2, 3
// on node-b): intra pairs near 9 GB/s, inter near 22 GB/s, rank 3's
// pairs as source error rows (it was killed). Its noise does not depend
// on the seed: two runs hold the same mesh, which compare never flags.
func (w *writer) mesh(o Options) {
	rng := rand.New(rand.NewPCG(7, 11))
	noise := func() float64 { return math.Exp(o.Noise * rng.NormFloat64()) }
	c := w.open(meshFile, columns("mesh", meshFile))
	defer w.close(c)
	node := func(r int) string { return []string{"node-a", "node-a", "node-b", "node-b"}[r] }
	for _, size := range []int64{64 << 20, 1 << 30} {
		for src := range 4 {
			for dst := range 4 {
				if src == dst {
					continue
				}
				pair := "inter"
				if node(src) == node(dst) {
					pair = "intra"
				}
				for rep := range o.Reps {
					r := results.NewRow("mesh")
					r.Backend, r.Transport, r.Tier, r.Layout, r.Rep = "cuda", "verbs", "remote", "blockwise", rep
					r.Bytes, r.ChunkBytes = size, BlockBytes
					if src == 3 {
						r.Fail(fmt.Errorf("source rank 3 (node-b) gone before this pair: its control connection closed (the process ended)"))
					} else {
						peak := map[string]float64{"intra": 9e9, "inter": 22e9}[pair]
						r.SetTime((30e-6 + float64(size)/peak) * noise())
						r.Set("verified", rep == 0)
					}
					r.Set("path", pair)
					r.Set("pair", pair)
					r.Set("line_gb_per_s", 50)
					r.Set("src_rank", src)
					r.Set("dst_rank", dst)
					r.Set("src_node", node(src))
					r.Set("dst_node", node(dst))
					r.Set("pattern", "pairwise")
					r.Set("src_nic", fmt.Sprintf("mlx5_%d", src%2))
					r.Set("dst_nic", fmt.Sprintf("mlx5_%d", dst%2))
					r.Set("launcher", "slurm")
					w.put(c, r)
				}
			}
		}
	}
}
