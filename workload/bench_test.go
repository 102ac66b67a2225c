package workload

import (
	"bytes"
	"errors"
	"io"
	"runtime"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// generated returns the default synthetic trace (about 12,000 requests
// and 290,000 block references) as text.
func generated(tb testing.TB) []byte {
	tb.Helper()
	var buf bytes.Buffer
	if _, err := Generate(&buf, DefaultGenOptions()); err != nil {
		tb.Fatal(err)
	}
	return buf.Bytes()
}

// readAll reads every request of a trace.
func readAll(tb testing.TB, text []byte, o Options) ([]*Request, ReadStats) {
	tb.Helper()
	r, err := NewReader(bytes.NewReader(text), "test", o)
	if err != nil {
		tb.Fatal(err)
	}
	var out []*Request
	for {
		req, err := r.Next()
		if errors.Is(err, io.EOF) {
			return out, r.Stats()
		}
		if err != nil {
			tb.Fatal(err)
		}
		out = append(out, req)
	}
}

func analyseAll(tb testing.TB, reqs []*Request, o AnalyzeOptions) *Analysis {
	tb.Helper()
	a, err := NewAnalyzer(o)
	if err != nil {
		tb.Fatal(err)
	}
	for _, r := range reqs {
		if err := a.Add(r); err != nil {
			tb.Fatal(err)
		}
	}
	return a.Finish(reqs[0].BlockTokens)
}

// BenchmarkAnalyze is the one-pass analysis (ceiling, decomposition, the
// exact LRU curve, two working-set windows) of the default generated
// trace, already parsed.
func BenchmarkAnalyze(b *testing.B) {
	reqs, _ := readAll(b, generated(b), Options{})
	var refs int64
	for _, r := range reqs {
		refs += int64(len(r.Hashes))
	}
	o := AnalyzeOptions{BytesPerToken: 98304, Windows: []float64{60, 600}}
	b.ResetTimer()
	for b.Loop() {
		analyseAll(b, reqs, o)
	}
	b.ReportMetric(float64(refs)*float64(b.N)/b.Elapsed().Seconds(), "refs/s")
}

// BenchmarkReadAnalyze adds parsing the JSON lines to BenchmarkAnalyze:
// what `kvtier trace` spends on a trace, in MB/s of trace text and block
// references per second.
func BenchmarkReadAnalyze(b *testing.B) {
	text := generated(b)
	o := AnalyzeOptions{BytesPerToken: 98304, Windows: []float64{60, 600}}
	var refs int64
	cpu := startCPU(b, text)
	for b.Loop() {
		reqs, _ := readAll(b, text, Options{})
		an := analyseAll(b, reqs, o)
		refs = an.BlockRefs
	}
	cpu.report(refs)
}

// cpuClock reports a benchmark's rates per second of the process's CPU
// time (user and system, all threads) beside the wall-clock ones: on a
// shared machine the wall clock counts the time others ran.
type cpuClock struct {
	b     *testing.B
	bytes int
	start time.Duration
}

func startCPU(b *testing.B, text []byte) cpuClock {
	b.SetBytes(int64(len(text)))
	return cpuClock{b: b, bytes: len(text), start: cpuTime(b)}
}

// report adds refs/s (references per iteration) and MB/cpu-s.
func (c cpuClock) report(refs int64) {
	n := float64(c.b.N)
	c.b.ReportMetric(float64(refs)*n/c.b.Elapsed().Seconds(), "refs/s")
	if cpu := (cpuTime(c.b) - c.start).Seconds(); cpu > 0 {
		c.b.ReportMetric(float64(c.bytes)*n/1e6/cpu, "MB/cpu-s")
	}
}

func cpuTime(b *testing.B) time.Duration {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// TestMemoryPerBlock measures the heap an exact analysis holds per
// distinct block (what the README states) and keeps it bounded.
func TestMemoryPerBlock(t *testing.T) {
	if testing.Short() {
		t.Skip("allocates a large trace")
	}
	o := DefaultGenOptions()
	o.Sessions, o.SystemPrompts = 4000, 0
	var buf bytes.Buffer
	if _, err := Generate(&buf, o); err != nil {
		t.Fatal(err)
	}
	reqs, _ := readAll(t, buf.Bytes(), Options{})
	var refs int64
	for _, r := range reqs {
		refs += int64(len(r.Hashes))
	}
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	a, err := NewAnalyzer(AnalyzeOptions{BytesPerToken: 1, Windows: []float64{60, 600}})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range reqs {
		if err := a.Add(r); err != nil {
			t.Fatal(err)
		}
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	distinct := int64(a.groups[0].ids.len())
	per := float64(after.HeapAlloc-before.HeapAlloc) / float64(distinct)
	t.Logf("%d requests, %d references, %d distinct blocks: %.0f B of analysis state per distinct block", len(reqs), refs, distinct, per)
	runtime.KeepAlive(a)
	runtime.KeepAlive(reqs)
	if per > 60 {
		t.Errorf("%.0f B per distinct block", per)
	}
}

// BenchmarkRead streams the default generated trace's JSON lines as
// requests (the scanner, ordering, sessions), keeping none: MB/s of
// trace text (by the wall clock and per CPU second) and block references
// per second.
func BenchmarkRead(b *testing.B) {
	text := generated(b)
	var refs int64
	cpu := startCPU(b, text)
	for b.Loop() {
		r, err := NewReader(bytes.NewReader(text), "bench", Options{})
		if err != nil {
			b.Fatal(err)
		}
		refs = 0
		for {
			req, err := r.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				b.Fatal(err)
			}
			refs += int64(len(req.Hashes))
		}
	}
	cpu.report(refs)
}

// BenchmarkDecode is the decoder alone: the scanner reading the known
// fields of every line of the default generated trace, already split into
// lines, allocating nothing.
func BenchmarkDecode(b *testing.B) {
	text := generated(b)
	lines := bytes.Split(bytes.TrimSpace(text), []byte("\n"))
	var f fields
	var refs int64
	cpu := startCPU(b, text)
	for b.Loop() {
		refs = 0
		for _, l := range lines {
			if !f.scan(l) {
				b.Fatalf("not scanned: %s", l)
			}
			refs += int64(len(f.hashes))
		}
	}
	cpu.report(refs)
}
