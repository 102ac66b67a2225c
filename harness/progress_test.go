package harness

import (
	"bytes"
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/kvtier/kvtier/results"
	"github.com/kvtier/kvtier/results/resultstest"
)

// fakeClock advances by step at every reading.
func fakeClock(step time.Duration) func() time.Time {
	t := time.Unix(0, 0)
	return func() time.Time {
		t = t.Add(step)
		return t
	}
}

// newTestProgress returns a Progress writing to buf, on a pretend
// terminal when term, with a clock that moves a second per reading.
func newTestProgress(buf *bytes.Buffer, term bool) *Progress {
	p := NewProgress(buf)
	p.now = fakeClock(time.Second)
	p.waitAfter = 0 // every wait a line at once
	if term {
		p.fd = 1 << 20 // no such descriptor: the width falls back to 79
	}
	return p
}

// forbidden are the words progress never uses: they belong to messages.
var forbidden = regexp.MustCompile(`(?i)warning|error`)

func TestProgressLinesOffTerminal(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	p := newTestProgress(&buf, false)
	p.Begin("before start")
	p.End("not shown")
	if buf.Len() != 0 {
		t.Fatalf("before Start: %q", buf.String())
	}
	p.Start("sweep", false)
	p.Plan(3)
	for i, label := range []string{"host 1k", "host 2k", "host 4k"} {
		p.Begin(label)
		p.Wait("the pool files to be written")
		for rep := range 5 {
			p.Rep(rep, 5)
		}
		p.End("p50 1.000 ms")
		if i == 0 {
			p.Note("a row measured")
		}
	}
	p.Stop()
	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	want := []*regexp.Regexp{
		regexp.MustCompile(`^kvtier sweep: \[1/3\] waiting for the pool files to be written \(.* elapsed, ETA unknown\)$`),
		regexp.MustCompile(`^kvtier sweep: \[1/3\] host 1k  p50 1.000 ms \(.*s elapsed, ETA .*s\)$`),
		regexp.MustCompile(`^a row measured$`),
		regexp.MustCompile(`^kvtier sweep: \[2/3\] waiting for`),
		regexp.MustCompile(`^kvtier sweep: \[2/3\] host 2k  p50`),
		regexp.MustCompile(`^kvtier sweep: \[3/3\] waiting for`),
		regexp.MustCompile(`^kvtier sweep: \[3/3\] host 4k  p50 1.000 ms \([^,]* elapsed\)$`),
	}
	if len(lines) != len(want) {
		t.Fatalf("got %d lines, want %d (one per configuration and wait):\n%s", len(lines), len(want), buf.String())
	}
	for i, re := range want {
		if !re.MatchString(lines[i]) {
			t.Errorf("line %d = %q, want %s", i, lines[i], re)
		}
	}
	if strings.ContainsAny(buf.String(), "\r\x1b") {
		t.Errorf("terminal control off a terminal: %q", buf.String())
	}
	if forbidden.MatchString(buf.String()) {
		t.Errorf("progress uses a message's word:\n%s", buf.String())
	}
}

func TestProgressETA(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	p := newTestProgress(&buf, false)
	p.now = func() time.Time { return time.Unix(0, 0) }
	p.Start("probe", false)
	p.Plan(4)
	p.now = func() time.Time { return time.Unix(30, 0) }
	p.Begin("miss 1024 tokens")
	p.End("")
	// One of four took 30 s: three more take 90 s.
	if !strings.Contains(buf.String(), "[1/4] miss 1024 tokens (30s elapsed, ETA 1m30s)") {
		t.Errorf("got %q", buf.String())
	}
}

// The ETA never says 0s while a step is left (a fast run with requests
// pending), and is not given once every configuration ended (an
// interrupted run's last line).
func TestProgressETANeverZeroWhilePending(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		done  int
		frac  float64
		total int
		want  string
	}{
		{0, 0.99, 1, "300ms elapsed, ETA under 0.1s"},
		{0, 0.5, 1, "300ms elapsed, ETA 300ms"},
		{1, 0, 1, "300ms elapsed"},
		{0, 0, 1, "300ms elapsed, ETA unknown"},
	} {
		p := NewProgress(new(bytes.Buffer))
		p.now = func() time.Time { return time.Unix(0, 3e8) }
		p.start, p.planned = time.Unix(0, 0), time.Unix(0, 0)
		p.done, p.frac, p.total = tt.done, tt.frac, tt.total
		if got := p.timing(); got != tt.want {
			t.Errorf("%d+%g of %d done: %q, want %q", tt.done, tt.frac, tt.total, got, tt.want)
		}
	}
}

func TestProgressQuiet(t *testing.T) {
	t.Parallel()
	for _, term := range []bool{false, true} {
		var buf bytes.Buffer
		p := newTestProgress(&buf, term)
		p.Start("probe", true)
		p.Plan(2)
		p.Begin("gpu 1024 tokens")
		p.Wait("the GPU cache flood")
		p.Rep(0, 5)
		p.Note("probe gpu 1024 tokens rep 0: ttft 0.1 s")
		p.End("done")
		p.Stop()
		if buf.Len() != 0 {
			t.Errorf("terminal %v: quiet progress wrote %q", term, buf.String())
		}
		p.Write([]byte("kvtier probe: wrote r\n"))
		if buf.String() != "kvtier probe: wrote r\n" {
			t.Errorf("terminal %v: a message through a quiet progress = %q", term, buf.String())
		}
	}
}

func TestProgressClearedBeforeMessage(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	p := newTestProgress(&buf, true)
	p.Start("knee", false)
	p.Plan(2)
	p.Begin("1000 GPU blocks")
	p.Wait("the server of 1000 GPU blocks to start")
	status := buf.String()
	if !strings.HasPrefix(status, "\r") || !strings.Contains(status, "[1/2] · 1000 GPU blocks · waiting for the server of") {
		t.Fatalf("status line = %q", status)
	}
	if forbidden.MatchString(status) {
		t.Errorf("status line uses a message's word: %q", status)
	}
	buf.Reset()
	p.Stop()
	p.Write([]byte("kvtier knee: --trace: no such file\n"))
	if got := buf.String(); got != "\r\x1b[K"+"kvtier knee: --trace: no such file\n" {
		t.Errorf("after Stop: %q, want the status line cleared, then the message alone", got)
	}
	// A message while the status line shows clears it first and draws
	// it again below.
	buf.Reset()
	p.Start("knee", false)
	p.Plan(1)
	p.Begin("2000 GPU blocks")
	buf.Reset()
	p.Write([]byte("kvtier knee: the server is vllm\n"))
	got := buf.String()
	if !strings.HasPrefix(got, "\r\x1b[Kkvtier knee: the server is vllm\n\r") {
		t.Errorf("message over the status line: %q", got)
	}
	p.Stop()
}

func TestProgressLongLineFitsTerminal(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	p := newTestProgress(&buf, true)
	p.Start("sweep", false)
	p.Begin(strings.Repeat("x", 300))
	p.Stop()
	for _, part := range strings.Split(buf.String(), "\r") {
		part = strings.TrimSuffix(part, "\x1b[K")
		if n := len([]rune(part)); n > 79 {
			t.Errorf("status line of %d columns, more than the terminal's 79", n)
		}
	}
}

func TestNilProgress(t *testing.T) {
	t.Parallel()
	var p *Progress
	p.Start("x", false)
	p.Plan(1)
	p.Begin("a")
	p.Rep(0, 1)
	p.Wait("b")
	p.Note("c")
	p.End("d")
	p.Stop()
	if ProgressOf(&bytes.Buffer{}) != nil {
		t.Error("ProgressOf a buffer is not nil")
	}
}

// TestSamplerProgress: the Sampler reports each case as a configuration
// of the run: one line each off a terminal, skipped ones included, and
// nothing at all when the run is quiet.
func TestSamplerProgress(t *testing.T) {
	t.Parallel()
	for _, quiet := range []bool{false, true} {
		var buf bytes.Buffer
		p := newTestProgress(&buf, false)
		p.Start("sweep", quiet)
		p.Plan(2)
		s := &Sampler{Suite: "sweep", Sink: &resultstest.Sink{}, Log: p, Policy: Policy{Warmup: 1, Reps: 3}}
		fetches := 0
		c := Case{Row: results.NewRow("sweep"), Label: "host 1k", Timer: &stepTimer{per: 1e-3, fetches: &fetches},
			Fetch: func(context.Context) error { fetches++; return nil }}
		if _, err := s.Measure(context.Background(), c); err != nil {
			t.Fatal(err)
		}
		if err := s.Skip(Case{Row: results.NewRow("sweep"), Label: "host 2k", Timer: &stepTimer{fetches: new(int)}}, "needs 2 GiB"); err != nil {
			t.Fatal(err)
		}
		p.Stop()
		out := buf.String()
		if quiet {
			if out != "" {
				t.Errorf("quiet: %q", out)
			}
			continue
		}
		lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
		if len(lines) != 2 || !strings.HasPrefix(lines[0], "kvtier sweep: [1/2] host 1k  p50") ||
			!strings.HasPrefix(lines[1], "kvtier sweep: [2/2] host 2k  skipped: needs 2 GiB") {
			t.Errorf("lines:\n%s", out)
		}
	}
}

// With weights, the ETA weighs what is left by the estimated costs: a
// costly configuration ahead is in it, where counting configurations
// would call the run nearly done.
func TestProgressWeightedETA(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	p := NewProgress(&b)
	start := time.Unix(0, 0)
	now := start
	p.now = func() time.Time { return now }
	p.Start("probe", false)
	defer p.Stop()
	p.PlanWeights([]float64{10, 10, 80})
	p.Begin("miss")
	now = start.Add(10 * time.Second)
	p.End("")
	if !strings.Contains(b.String(), "ETA 1m30s") {
		t.Errorf("after 10 s and a tenth of the work, want ETA 1m30s:\n%s", b.String())
	}
}

// The ETA scales by the time since the run planned its configurations:
// what the command did before (10 s of facts and set-up here) is not
// the first configuration's cost, which would make the ETA 11 times too
// long.
func TestProgressETAFromPlan(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	p := NewProgress(&b)
	now := time.Unix(0, 0)
	p.now = func() time.Time { return now }
	p.Start("sweep", false)
	defer p.Stop()
	now = now.Add(10 * time.Second)
	p.PlanWeights([]float64{1, 1})
	p.Begin("host 1k")
	now = now.Add(time.Second)
	p.End("")
	if !strings.Contains(b.String(), "(11s elapsed, ETA 1s)") {
		t.Errorf("1 s into two like configurations, 10 s after the start: want ETA 1s:\n%s", b.String())
	}
}

// With weights, the estimates set the pace until the run shows its own:
// a first configuration that took 4 times its estimate does not make
// the ETA 4 times the estimates left (they count as a tenth of the run
// done at their own pace).
func TestProgressWeightedETAPrior(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	p := NewProgress(&b)
	now := time.Unix(0, 0)
	p.now = func() time.Time { return now }
	p.Start("sweep", false)
	defer p.Stop()
	p.PlanWeights([]float64{10, 10, 80})
	p.Begin("host 1k")
	now = now.Add(40 * time.Second)
	p.End("")
	// (40 s + 10) / (10 + 10) × 90 left, not 40 / 10 × 90.
	if !strings.Contains(b.String(), "(40s elapsed, ETA 3m45s)") {
		t.Errorf("want ETA 3m45s:\n%s", b.String())
	}
}
