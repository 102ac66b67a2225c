package harness

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"time"

	"github.com/kvtier/kvtier/option"
	"github.com/kvtier/kvtier/results"
	"github.com/kvtier/kvtier/system/meminfo"
	"github.com/kvtier/kvtier/units"
)

// DefaultWarmup is --warmup wherever samples are discarded first (sweep,
// transfer, mesh): the first sample pays one-time costs a measured one
// must not see (page faults and TLB fills of fresh pools, lazy CUDA
// module and cuBLAS set-up, a new connection's slow start), and the
// second shows the steady state the reps measure and sizes the repeat
// count of small copies from it.
const DefaultWarmup = 2

// WarmupUsage is the help of --warmup, the same in every command.
const WarmupUsage = "discarded warm-up samples per configuration (one default in every command: why in docs/gpu-node.md, What kvtier picks by itself)"

// A Policy says how a Sampler measures each case.
type Policy struct {
	Warmup int // samples run and discarded before the measured ones
	Reps   int // measured samples per case
	// Budget bounds the time of one case: when the warm-up shows Reps
	// samples would not fit, fewer are measured (at least one). Zero
	// means no bound.
	Budget time.Duration
}

// Validate reports the policy's problems as option.Errors naming reps,
// warmup and budget; needBudget makes a zero budget one.
func (p Policy) Validate(needBudget bool) error {
	errs := []error{option.Range("reps", p.Reps, 1, 1_000_000), option.Range("warmup", p.Warmup, 0, 1_000_000)}
	if needBudget {
		errs = append(errs, option.Positive("budget", p.Budget))
	} else {
		errs = append(errs, option.NotNegative("budget", p.Budget, "0: no budget"))
	}
	return errors.Join(errs...)
}

// Verified reports whether measured rep rep of n is verified: the first
// and the last, in every suite, so a case is checked at both ends of its
// reps and a scrub never runs inside the timed ones between.
func Verified(rep, n int) bool { return rep == 0 || rep == n-1 }

// A Timer times one sample: the tiers' timers (CUDA events on a held
// stream, the host's monotonic clock) are the only clocks whose readings
// become a row's seconds. The interface is the one tiers.Timer declares,
// restated here so that the core does not link the backends.
type Timer interface {
	// Start begins a sample.
	Start() error
	// Stop waits for the sample's work and returns the elapsed seconds.
	Stop() (float64, error)
	// Kind is the timing column: "events" or "clock".
	Kind() string
}

// A HeldTimer is a Timer that says whether the last sample's stream was
// held until all its work was queued (tiers.HeldTimer).
type HeldTimer interface {
	Timer
	Held() bool
}

// A Case is one configuration a Sampler measures.
type Case struct {
	// Row holds the columns every row of the case shares.
	Row results.Row
	// Label names the case in progress lines.
	Label string
	// Timer times one sample; its Kind is the rows' timing column. A
	// HeldTimer also says per sample whether the stream was held until
	// the work was queued (held); any other leaves held false.
	Timer Timer
	// Fetch does the work of one sample, between the timer's Start and
	// Stop.
	Fetch func(ctx context.Context) error
	// Before, when not nil, runs before every sample (warm-up,
	// calibration and measured ones), untimed: it restores what each
	// sample must start from (the disk tier drops its file's pages from
	// the page cache). Its error fails the sample.
	Before func() error
	// Scrub, when not nil, overwrites the destination before a verified
	// sample so that Verify sees only what that sample brought. It is
	// never timed.
	Scrub func() error
	// Verify, when not nil, checks the destination after a verified
	// sample; a mismatch makes that row an error. Nil means the case moves
	// no data (recompute) and its rows leave verified empty.
	Verify func() error
	// Work is the FLOPs of one sample of a compute case (the flops and
	// tflops columns); 0 for cases that move bytes.
	Work float64
	// Derive, when not nil, adds columns computed from an ok row's time
	// (line_frac, ...).
	Derive func(*results.Row)
	// Repeat lets a sample whose warm-up took under MinSample run Fetch
	// back to back until the sample lasts at least MinSample (as
	// nvbandwidth times small copies): the row's seconds are then per
	// Fetch and its repeat column says how many ran. Only for fetches
	// that can run again at once (copies into the same destination).
	Repeat bool
	repeat int // Fetches per sample, from the warm-up; 0 or 1: one
}

// MinSample is the shortest a Repeat case's sample is timed for: event
// resolution (about 0.5 µs) and launch jitter stay under 0.1 % of it.
const MinSample = time.Millisecond

// MaxRepeat bounds the Fetches of one sample.
const MaxRepeat = 10000

// repeats is how many Fetches of a Repeat case make a sample of at least
// MinSample, from a warm-up sample of warm seconds.
func repeats(warm float64) int {
	if warm <= 0 || warm >= MinSample.Seconds() {
		return 1
	}
	return min(MaxRepeat, int(math.Ceil(MinSample.Seconds()/warm)))
}

// A Result is what Measure learnt of one case.
type Result struct {
	Seconds results.Stats // of the ok samples
	Reps    int           // measured reps run: fewer than the policy's under the budget
	Errors  int           // error rows written
	// Err is the sample error that ended the case early (a failed fetch,
	// a peer gone); nil when every rep ran.
	Err error
}

// A Sampler measures cases and writes one row per measured sample. It is
// the one timing loop of kvtier: the tier sweep, MB2's network reads and
// peer copies and `go test -bench` all time through it, so warm-up,
// verification, labels and progress are the same everywhere.
type Sampler struct {
	Suite  string // names the suite in progress lines
	Sink   results.Sink
	Log    io.Writer // progress lines (stderr); nil discards them
	Policy Policy
}

// row returns the case's row labelled with its timer, for rep.
func (s *Sampler) row(c *Case, rep int) results.Row {
	r := c.Row
	r.Extra = make(map[string]string, len(c.Row.Extra)+4)
	maps.Copy(r.Extra, c.Row.Extra)
	r.Suite = s.Suite
	r.Rep = rep
	r.Set("timing", c.Timer.Kind())
	r.Set("held", false)
	return r
}

// Sample times one Fetch of c and returns its seconds and whether the
// stream was held (false where the timer cannot say).
func (s *Sampler) Sample(ctx context.Context, c *Case) (float64, bool, error) {
	if c.Before != nil {
		if err := c.Before(); err != nil {
			return 0, false, fmt.Errorf("before the sample: %w", err)
		}
	}
	return s.timed(ctx, c)
}

// timed times one sample of c after its Before: the timer's Start, the
// Fetches, the timer's Stop.
func (s *Sampler) timed(ctx context.Context, c *Case) (float64, bool, error) {
	if err := c.Timer.Start(); err != nil {
		return 0, false, fmt.Errorf("timer start: %w", err)
	}
	n := max(c.repeat, 1)
	var ferr error
	for i := 0; i < n && ferr == nil; i++ {
		ferr = c.Fetch(ctx)
	}
	sec, err := c.Timer.Stop()
	sec /= float64(n)
	if ferr != nil {
		return 0, false, fmt.Errorf("fetch: %w", ferr)
	}
	if err != nil {
		return 0, false, fmt.Errorf("timer stop: %w", err)
	}
	held := false
	if h, ok := c.Timer.(HeldTimer); ok {
		held = h.Held()
	}
	return sec, held, nil
}

// Skip writes one skipped row for c with the reason and says so: one
// configuration of the run's progress.
func (s *Sampler) Skip(c Case, reason string) error {
	r := s.row(&c, 0)
	r.Skip(reason)
	s.begin(c.Label)
	s.end(c.Label, "skipped: "+reason)
	return s.write(r)
}

// SkipSaid writes the skipped row of c, with reason, without a progress
// line: for a configuration the run's first lines already counted under
// its reason, so that twenty alike are not twenty lines.
func (s *Sampler) SkipSaid(c Case, reason string) error {
	r := s.row(&c, 0)
	r.Skip(reason)
	return s.write(r)
}

// Fail writes one error row for rep of c and says so: one configuration
// of the run's progress.
func (s *Sampler) Fail(c Case, rep int, err error) error {
	s.begin(c.Label)
	return s.fail(c, rep, err)
}

// fail writes one error row for rep of c, the configuration under way,
// and ends it.
func (s *Sampler) fail(c Case, rep int, err error) error {
	r := s.row(&c, rep)
	r.Fail(err)
	s.end(c.Label, "failed: "+err.Error())
	return s.write(r)
}

func (s *Sampler) write(r results.Row) error {
	if err := s.Sink.Write(r); err != nil {
		return fmt.Errorf("%s: %w", s.Suite, err)
	}
	return nil
}

// progress says what happened within the configuration label: a line of
// the run's account (Progress.Note).
func (s *Sampler) progress(label, what string) {
	Note(s.Log, fmt.Sprintf("%s: %s %s", s.Suite, label, what))
}

// begin starts the configuration label in the run's progress.
func (s *Sampler) begin(label string) { ProgressOf(s.Log).Begin(label) }

// end ends the configuration label with what it found: the run's
// progress line for it, or without a Progress the line the Sampler
// always printed.
func (s *Sampler) end(label, what string) {
	if p := ProgressOf(s.Log); p != nil {
		p.End(what)
	} else if s.Log != nil {
		fmt.Fprintf(s.Log, "%s: %s %s\n", s.Suite, label, what)
	}
}

// Measure runs the policy's warm-up and measured reps of c and writes a
// row per measured rep. A failed sample is an error row and ends the
// case (Result.Err says why); a failed verification is an error row and
// the case goes on. The error returned is one that must stop the run:
// ctx cancelled, or a row that could not be written.
func (s *Sampler) Measure(ctx context.Context, c Case) (Result, error) {
	var res Result
	s.begin(c.Label)
	warm, err := s.warmup(ctx, &c)
	if err != nil {
		if ctx.Err() != nil {
			return res, ctx.Err()
		}
		res.Errors, res.Err = 1, err
		return res, s.fail(c, 0, err)
	}
	if c.Repeat {
		c.repeat = repeats(warm)
	}
	res.Reps = s.Policy.reps(warm * float64(max(c.repeat, 1)))
	var secs []float64
	for rep := 0; rep < res.Reps; rep++ {
		ProgressOf(s.Log).Rep(rep, res.Reps)
		r, err := s.measureRep(ctx, &c, rep, Verified(rep, res.Reps))
		if ctx.Err() != nil {
			return res, ctx.Err()
		}
		if r.Status == results.StatusOK {
			secs = append(secs, r.Seconds)
		} else {
			res.Errors++
		}
		if werr := s.write(r); werr != nil {
			return res, werr
		}
		if err != nil {
			res.Err = err
			break
		}
	}
	res.Seconds = results.Describe(secs)
	s.summary(&c, res)
	return res, nil
}

// warmup runs the discarded samples and returns the last one's seconds;
// it stops early when the warm-up alone would eat the budget.
func (s *Sampler) warmup(ctx context.Context, c *Case) (float64, error) {
	var warm float64
	for w := 0; w < s.Policy.Warmup; w++ {
		ProgressOf(s.Log).Warmup(w, s.Policy.Warmup)
		sec, _, err := s.Sample(ctx, c)
		if err != nil {
			return 0, fmt.Errorf("warm-up: %w", err)
		}
		warm = sec
		if b := s.Policy.Budget; b > 0 && sec*float64(w+2) > b.Seconds() {
			break
		}
	}
	return warm, nil
}

// reps is how many measured reps fit the budget after a warm-up sample
// of warm seconds.
func (p Policy) reps(warm float64) int {
	n := max(p.Reps, 1)
	if b := p.Budget; b > 0 && warm > 0 {
		n = min(n, max(1, int(b.Seconds()/warm)))
	}
	return n
}

// Samples is how many samples, warm-up and measured, a Sampler takes of
// a case whose samples take sec seconds each: for a run's estimate of
// its time.
func (p Policy) Samples(sec float64) int {
	warm := p.Warmup
	if b := p.Budget.Seconds(); b > 0 && sec > 0 && warm > 0 {
		warm = min(warm, max(1, int(b/sec)-1)) // as warmup stops
	}
	return warm + p.reps(sec)
}

// measureRep runs one measured rep and returns its row; err is the
// sample's own failure (the row is then an error row).
func (s *Sampler) measureRep(ctx context.Context, c *Case, rep int, verify bool) (results.Row, error) {
	r := s.row(c, rep)
	if verify && c.Verify != nil && c.Scrub != nil {
		if err := c.Scrub(); err != nil {
			err = fmt.Errorf("scrub: %w", err)
			r.Fail(err)
			return r, err
		}
	}
	sec, held, err := s.Sample(ctx, c)
	if err != nil {
		r.Fail(err)
		s.progress(c.Label, fmt.Sprintf("rep %d failed: %v", rep, err))
		return r, err
	}
	s.finish(c, &r, rep, sec, held, verify)
	return r, nil
}

// finish completes the row r of a sample of c that took sec: its time,
// the columns derived from it and, when verify, the verification.
func (s *Sampler) finish(c *Case, r *results.Row, rep int, sec float64, held, verify bool) {
	r.Set("held", held)
	if c.Repeat {
		r.Set("repeat", max(c.repeat, 1))
	}
	r.SetTime(sec)
	if c.Work > 0 && sec > 0 {
		r.Set(results.ColFLOPS, c.Work)
		r.Set(results.ColTFLOPS, c.Work/sec/1e12)
	}
	if c.Derive != nil {
		c.Derive(r)
	}
	if verify && c.Verify != nil {
		if err := c.Verify(); err != nil {
			r.Set(results.ColVerified, false)
			r.Fail(fmt.Errorf("verify: %w", err))
			s.progress(c.Label, fmt.Sprintf("VERIFICATION FAILED rep %d: %v", rep, err))
		} else {
			r.Set(results.ColVerified, true)
		}
	}
}

// summary ends the case's configuration with its p50, rate and n.
func (s *Sampler) summary(c *Case, res Result) {
	if what, ok := s.summaryText(c, res); ok {
		s.end(c.Label, what)
	} else if p := ProgressOf(s.Log); p != nil {
		p.End("no sample ok")
	}
}

// summaryText is the p50, rate and n of a case's samples; ok is false
// when none was ok.
func (s *Sampler) summaryText(c *Case, res Result) (string, bool) {
	st := res.Seconds
	if st.N == 0 {
		return "", false
	}
	what := fmt.Sprintf("p50 %9s", units.FormatSeconds(st.P50))
	switch {
	case c.Row.Bytes > 0:
		what += fmt.Sprintf("  %8.2f GB/s", float64(c.Row.Bytes)/st.P50/1e9)
	case c.Work > 0:
		what += fmt.Sprintf("  %8.4f TFLOP/s", c.Work/st.P50/1e12)
	}
	what += fmt.Sprintf("  n=%d", st.N)
	if res.Reps < s.Policy.Reps {
		what += fmt.Sprintf(" (%d of %d reps within the budget of %s)", res.Reps, s.Policy.Reps, s.Policy.Budget)
	}
	return what, true
}

// MemoryShare is the share of available memory one case may plan to
// use: the same rule for host memory (MemAvailable) and device memory
// (free per the driver) in every suite.
const MemoryShare = 0.8

// FitReason returns "" when need bytes fit in MemoryShare of avail bytes
// of what ("host memory", "GPU1 memory"), else the reason a skipped row
// gives.
func FitReason(what string, need, avail int64) string {
	if float64(need) <= MemoryShare*float64(avail) {
		return ""
	}
	return fmt.Sprintf("needs %s of %s, %s available", units.FormatBytes(need), what, units.FormatBytes(avail))
}

// HostFitReason is FitReason against the host's MemAvailable, read from
// procfs under root. Where it cannot be read the answer is "" (fits) and
// the error says why, for a warning.
func HostFitReason(root string, need int64) (string, error) {
	avail, err := meminfo.Available(root)
	if err != nil {
		return "", fmt.Errorf("free memory unknown, not checked: %w", err)
	}
	return FitReason("host memory", need, avail), nil
}
