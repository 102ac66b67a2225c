package bench

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/kvtier/kvtier/diskio"
	"github.com/kvtier/kvtier/harness"
	"github.com/kvtier/kvtier/harness/sweep"
	"github.com/kvtier/kvtier/kv"
	"github.com/kvtier/kvtier/results"
	"github.com/kvtier/kvtier/tiers"
	"github.com/kvtier/kvtier/units"
)

// BenchmarkDiskVsFio is the disk tier's anchor: fio, what users would run
// instead, replays exactly the reads or writes kvtier did. kvtier writes
// the sequence of (offset, length) of a fetch (or store) of the prefix
// as a fio iolog and fio replays it (--read_iolog) with the same depth,
// io_uring, registered buffers and O_DIRECT; writes go to a file of
// fio's own, so the file kvtier verifies against is never overwritten.
// In each of three alternating rounds kvtier's median of three samples
// (the Sampler, as in a sweep) is set against the median of three fio
// runs. Each sub-benchmark reports the median of the three rounds'
// kvtier/fio throughput ratios (goal: 0.9 or more) and logs every round
// and both sides' CPU time per I/O; the read cases also log fio's own
// read and randread figures beside. What each side times is said at
// replay.
//
//	go test -run '^$' -bench DiskVsFio -benchtime 1x ./bench
//
// contiguous: kvtier's contiguous copy mode (the prefix's payload as
// block-sized sequential reads, io_uring); scattered16k: the layerwise
// layout's 16 KiB chunks scattered over the file, one read each;
// contiguous-write and scattered16k-write: the same, stored (sync none).
//
// Environment: KVTIER_DISK_DIR (default a temporary directory; tmpfs is
// refused), KVTIER_FIO_PREFIX (tokens, default 4k), KVTIER_IODEPTH
// (default 32), KVTIER_FIO_CASES (default all four, comma-separated).
func BenchmarkDiskVsFio(b *testing.B) {
	if _, err := exec.LookPath("fio"); err != nil {
		b.Skip("no fio (Debian package fio; make test installs it)")
	}
	a := newAnchor(b)
	cases := env("KVTIER_FIO_CASES", "contiguous,scattered16k,contiguous-write,scattered16k-write")
	for _, c := range []anchorCase{
		{"contiguous", kv.Blockwise, tiers.Contiguous, tiers.Load},
		{"scattered16k", kv.Layerwise, tiers.PerCopy, tiers.Load},
		{"contiguous-write", kv.Blockwise, tiers.Contiguous, tiers.Store},
		{"scattered16k-write", kv.Layerwise, tiers.PerCopy, tiers.Store},
	} {
		if !slices.Contains(strings.Split(cases, ","), c.name) {
			continue
		}
		b.Run(c.name, func(b *testing.B) {
			cfg := a.config(b, c)
			defer cfg.Tier.Close()
			log := a.iolog(b, cfg, c)
			var ratios []float64
			var kcpu, fcpu cpuTally
			for round := range rounds {
				k, f := a.round(b, cfg, log, c.dir == tiers.Store, round, &kcpu, &fcpu)
				ratios = append(ratios, k/f)
				b.Logf("round %d: kvtier %.3f GB/s, fio (its iolog) %.3f GB/s, ratio %.3f", round+1, k/1e9, f/1e9, k/f)
			}
			sort.Float64s(ratios)
			b.ReportMetric(ratios[1], "kvtier/fio")
			contiguous := c.mode == tiers.Contiguous
			if c.dir == tiers.Load {
				b.Logf("beside: fio %s %.3f GB/s", map[bool]string{true: "read", false: "randread"}[contiguous],
					a.fio(b, contiguous).bw/1e9)
			}
			ios := float64(a.prefix.Blocks) * float64(a.geom.BlockBytes()) / float64(a.readSize(contiguous))
			b.Logf("CPU per I/O: kvtier %.1f µs (the process, in its timed fetches), fio %.1f µs (its job, setup included)",
				kcpu.per(ios)*1e6, fcpu.per(ios)*1e6)
			b.Logf("%s: median kvtier/fio %.3f (goal >= 0.9), depth %d, %s per %s", c.name, ratios[1], a.depth,
				units.FormatBytes(a.readSize(contiguous)), map[bool]string{true: "write", false: "read"}[c.dir == tiers.Store])
		})
	}
}

// An anchorCase is one case of BenchmarkDiskVsFio.
type anchorCase struct {
	name   string
	layout kv.Layout
	mode   tiers.CopyMode
	dir    tiers.Direction
}

// rounds is how many rounds BenchmarkDiskVsFio alternates.
const rounds = 3

// round measures kvtier (a sample) and fio (a replay of log) in turn,
// three times each, and returns the medians of their bytes per second;
// it adds their CPU times to kcpu and fcpu. kvtier's first sample of
// the first round and last of the last are verified (as the Sampler
// verifies a case's first and last reps): a verified sample scrubs what
// it will move first, and a store's scrub rewrites the whole range on
// the disk right before the timed writes, which fio's replays are not
// made to follow.
func (a *anchor) round(b *testing.B, c sweep.Config, log string, write bool, round int, kcpu, fcpu *cpuTally) (kvtier, fio float64) {
	var ks, fs []float64
	for i := range 3 {
		verify := (round == 0 && i == 0) || (round == rounds-1 && i == 2)
		ks = append(ks, a.sample(b, c, i == 0, verify, kcpu))
		r := a.replay(b, log, write)
		fcpu.add(r.cpu, 1)
		fs = append(fs, r.bw)
	}
	return median(ks), median(fs)
}

// A cpuTally adds up CPU seconds over runs of the same I/O.
type cpuTally struct {
	sec  float64
	runs int
}

func (t *cpuTally) add(sec float64, runs int) { t.sec, t.runs = t.sec+sec, t.runs+runs }

// per is the CPU seconds per I/O of runs of ios I/Os each.
func (t *cpuTally) per(ios float64) float64 {
	if t.runs == 0 || ios == 0 {
		return 0
	}
	return t.sec / float64(t.runs) / ios
}

// processCPU is the user and system CPU seconds the process has used.
func processCPU() float64 {
	var ru unix.Rusage
	if unix.Getrusage(unix.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}

func median(xs []float64) float64 {
	sort.Float64s(xs)
	return xs[len(xs)/2]
}

// iolog writes what a fetch (or store) of the prefix by c does as a fio
// iolog and returns its path: reads of the tier's file, or writes of a
// file of fio's own as large as the store's.
func (a *anchor) iolog(b *testing.B, c sweep.Config, ac anchorCase) string {
	b.Helper()
	l, ok := c.Tier.(tiers.IOLogger)
	if !ok {
		b.Fatal("the disk tier cannot write an iolog")
	}
	file := l.File()
	if ac.dir == tiers.Store {
		file = a.fioFile(b, l.File())
	}
	path := filepath.Join(b.TempDir(), ac.name+".iolog")
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	if err := l.IOLog(f, a.prefix, file); err != nil {
		b.Fatal(err)
	}
	return path
}

// fioFile returns fio's file for writes, written once as large as like.
func (a *anchor) fioFile(b *testing.B, like string) string {
	b.Helper()
	st, err := os.Stat(like)
	if err != nil {
		b.Fatal(err)
	}
	path := filepath.Join(a.dir, "kvtier-fio-writes.data")
	if fi, err := os.Stat(path); err == nil && fi.Size() >= st.Size() {
		return path
	}
	if err := diskio.Write(context.Background(), path, st.Size(), 2); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { os.Remove(path) })
	return path
}

// replay runs fio on log with kvtier's depth, io_uring, registered
// buffers and O_DIRECT, and returns its bytes per second and CPU time.
//
// What each side times: fio's bw is the bytes over its job's runtime,
// from just before its first I/O is queued to the last completion, in
// milliseconds rounded up; kvtier's is the bytes over a sample's wall
// time, the tier's Fetch alone (the page cache dropped, the file checked
// and, for verified samples, the scrub before and the check after all
// stay outside). Both queue the same (offset, length) list in the same
// order at the same depth with O_DIRECT and registered buffers; fio
// lands every read in one of depth buffers of its own (or writes from
// them), kvtier each chunk in its own place in the working pool, as a
// load must, which on a virtual disk whose host copies every request
// costs kvtier a few percent more.
func (a *anchor) replay(b *testing.B, log string, write bool) fioResult {
	b.Helper()
	return runFio(b, write, "--name=kvtier-replay", "--read_iolog="+log, "--direct=1", "--ioengine=io_uring", "--fixedbufs",
		"--iodepth="+strconv.Itoa(a.depth), "--output-format=json", "--invalidate=1")
}

// A fioResult is what one fio run reports: bytes per second of its
// job's reads (or writes) and the job's CPU seconds, user and system.
type fioResult struct {
	bw, cpu float64
}

// runFio runs fio with args and returns what its one job did.
func runFio(b *testing.B, write bool, args ...string) fioResult {
	b.Helper()
	out, err := exec.Command("fio", args...).Output()
	if err != nil {
		b.Fatalf("fio %v: %v\n%s", args, err, out)
	}
	type dir struct {
		BWBytes float64 `json:"bw_bytes"`
	}
	var r struct {
		Jobs []struct {
			Read    dir     `json:"read"`
			Write   dir     `json:"write"`
			Usr     float64 `json:"usr_cpu"`     // percent of the job's run time
			Sys     float64 `json:"sys_cpu"`     // percent of the job's run time
			Runtime float64 `json:"job_runtime"` // milliseconds, setup included
		} `json:"jobs"`
	}
	if err := json.Unmarshal(out, &r); err != nil || len(r.Jobs) != 1 {
		b.Fatalf("fio output: %v\n%s", err, out)
	}
	bw := r.Jobs[0].Read.BWBytes
	if write {
		bw = r.Jobs[0].Write.BWBytes
	}
	if bw <= 0 {
		b.Fatalf("fio moved nothing:\n%s", out)
	}
	j := r.Jobs[0]
	return fioResult{bw: bw, cpu: (j.Usr + j.Sys) / 100 * j.Runtime / 1e3}
}

// An anchor is the shared state of BenchmarkDiskVsFio: the host backend,
// the geometry and prefix, the run's scratch directory and the tier's
// file in it (written by the first configuration, read by every one).
type anchor struct {
	backend tiers.Backend
	geom    kv.Geometry
	prefix  tiers.Prefix
	depth   int
	dir     string
	shared  *tiers.Shared
	file    string
}

func newAnchor(b *testing.B) *anchor {
	b.Helper()
	a := &anchor{geom: mustModel(b), shared: tiers.NewShared(), dir: env("KVTIER_DISK_DIR", "")}
	b.Cleanup(func() { a.shared.Close() })
	if a.dir == "" {
		a.dir = b.TempDir()
	}
	if fs, err := diskio.StatFS(a.dir); err != nil || fs.Memory {
		b.Skipf("no disk under %s: %v %s (set KVTIER_DISK_DIR)", a.dir, err, fs.MemoryReason(a.dir))
	}
	tok, err := units.ParseTokens(env("KVTIER_FIO_PREFIX", "4k"))
	if err != nil {
		b.Fatalf("KVTIER_FIO_PREFIX: %v", err)
	}
	a.prefix = sweep.Prefix(a.geom, tok)
	if a.depth, err = strconv.Atoi(env("KVTIER_IODEPTH", "32")); err != nil || a.depth < 1 {
		b.Fatalf("KVTIER_IODEPTH: %v", err)
	}
	if a.backend, err = tiers.OpenHost(tiers.BackendConfig{NUMA: -1}); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { a.backend.Close() })
	return a
}

func mustModel(b *testing.B) kv.Geometry {
	g, err := kv.LookupModel(kv.DefaultModel)
	if err != nil {
		b.Fatal(err)
	}
	return g
}

// readSize is the size of one read: a block for contiguous reads, a
// chunk (16 KiB) for scattered ones.
func (a *anchor) readSize(contiguous bool) int64 {
	if contiguous {
		return a.geom.BlockBytes()
	}
	return a.geom.ChunkBytes(kv.Layerwise)
}

// config sets up the disk tier (io_uring, O_DIRECT, no sync) for case
// ac and the prefix; the first load writes the file.
func (a *anchor) config(b *testing.B, ac anchorCase) sweep.Config {
	b.Helper()
	layout, mode := ac.layout, ac.mode
	spec, err := tiers.Lookup("disk")
	if err != nil {
		b.Fatal(err)
	}
	o := tiers.NewDiskOptions()
	o.IO, o.IODepth, o.Sync = diskio.Uring, a.depth, tiers.SyncNone
	env := tiers.Env{Backend: a.backend, Geometry: a.geom, Layout: layout, Copy: mode, Seed: 1, Direction: ac.dir,
		Options: o, Scratch: a.dir, Shared: a.shared}
	c := sweep.Config{Backend: a.backend, Spec: spec, Tier: spec.New(env), Layout: layout, Copy: mode, Direction: ac.dir, Geom: a.geom, Seed: 1}
	if r := c.Tier.Available(); r != "" {
		b.Skip(r)
	}
	if err := c.Tier.Setup(context.Background(), a.prefix.Blocks); err != nil {
		b.Fatal(err)
	}
	if a.file == "" && ac.dir == tiers.Load {
		a.file = c.Tier.(tiers.IOLogger).File()
	}
	return c
}

// sample measures one sample of c through the sweep's Sampler (after a
// discarded one when warm), verified when verify, and returns its bytes
// per second; it adds the CPU time of the fetches to cpu.
func (a *anchor) sample(b *testing.B, c sweep.Config, warm, verify bool, cpu *cpuTally) float64 {
	b.Helper()
	var row results.Row
	p := harness.Policy{Reps: 1}
	if warm {
		p.Warmup = 1
	}
	s := &harness.Sampler{Suite: "bench", Sink: sinkFunc(func(r results.Row) error { row = r; return nil }), Policy: p}
	hc := c.Case(a.prefix)
	if !verify {
		hc.Scrub, hc.Verify = nil, nil
	}
	fetch := hc.Fetch
	hc.Fetch = func(ctx context.Context) error {
		t0 := processCPU()
		err := fetch(ctx)
		cpu.add(processCPU()-t0, 1)
		return err
	}
	res, err := s.Measure(context.Background(), hc)
	if err != nil || res.Err != nil || row.Status != results.StatusOK {
		b.Fatalf("kvtier: %v %v %s %s", err, res.Err, row.Status, row.Reason)
	}
	return float64(row.Bytes) / row.Seconds
}

// spanStart is where in the file the contiguous copy mode's span starts:
// the tier's placement (seed 1) of the prefix's first block in the file,
// moved back as kv.ContiguousSpan moves it.
func (a *anchor) spanStart(b *testing.B) int64 {
	n := a.prefix.Blocks
	src := kv.Pool{Geometry: a.geom, Layout: kv.Blockwise, Slots: kv.PoolSlots(n)}
	dst := kv.Pool{Geometry: a.geom, Layout: kv.Blockwise, Slots: n}
	ss, err := kv.Placement(1, src.Slots, n)
	if err != nil {
		b.Fatal(err)
	}
	ds, err := kv.Placement(1^0x5bd1e995, dst.Slots, n)
	if err != nil {
		b.Fatal(err)
	}
	plan, err := kv.GatherPlan(src, ss, dst, ds)
	if err != nil {
		b.Fatal(err)
	}
	span, err := kv.ContiguousSpan(plan, src.Size(), dst.Size())
	if err != nil {
		b.Fatal(err)
	}
	return span.Src
}

// fio runs fio on the tier's file with the same read size, depth and
// O_DIRECT, over as many bytes as the prefix, and returns its bytes per
// second: sequential over the bytes kvtier's contiguous reads cover, or
// random reads over the whole file.
func (a *anchor) fio(b *testing.B, contiguous bool) fioResult {
	b.Helper()
	payload := int64(a.prefix.Blocks) * a.geom.BlockBytes()
	args := []string{"--name=kvtier-anchor", "--filename=" + a.file, "--direct=1", "--ioengine=io_uring", "--fixedbufs",
		"--iodepth=" + strconv.Itoa(a.depth), "--bs=" + strconv.FormatInt(a.readSize(contiguous), 10),
		"--output-format=json", "--invalidate=1"}
	if contiguous {
		args = append(args, "--rw=read", "--offset="+strconv.FormatInt(a.spanStart(b), 10), "--size="+strconv.FormatInt(payload, 10))
	} else {
		args = append(args, "--rw=randread", "--io_size="+strconv.FormatInt(payload, 10))
	}
	return runFio(b, false, args...)
}
