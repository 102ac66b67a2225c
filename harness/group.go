package harness

import (
	"context"
	"fmt"
	"sync"

	"github.com/kvtier/kvtier/results"
)

// MeasureGroup measures cases side by side, as eight GPUs of a node load
// at once: every warm-up and measured sample of each case starts
// together (their Before run first, then a barrier releases every
// timed sample at once), each timed by its case's own timer. Per
// measured rep it writes one row per case, as Measure would, then one
// row of agg, the aggregate: its seconds are the slowest case's, its
// bytes are agg.Row.Bytes (the caller sets the sum), its held is true
// only when every case's was, and it is an error row when any case's is.
// Repeat cases run the same number of Fetches per sample, sized from the
// slowest warm-up. The Result is the aggregate's. agg's Timer only names
// the timing column; it is never started.
func (s *Sampler) MeasureGroup(ctx context.Context, cs []Case, agg Case) (Result, error) {
	var res Result
	s.begin(agg.Label)
	warm, err := s.groupWarmup(ctx, cs)
	if err != nil {
		if ctx.Err() != nil {
			return res, ctx.Err()
		}
		res.Errors, res.Err = 1, err
		return res, s.groupFailed(cs, agg, err)
	}
	n := 1
	if agg.Repeat {
		n = repeats(warm)
		for i := range cs {
			cs[i].repeat = n
		}
		agg.repeat = n
	}
	res.Reps = s.Policy.reps(warm * float64(n))
	per := make([][]float64, len(cs))
	var secs []float64
	for rep := 0; rep < res.Reps; rep++ {
		ProgressOf(s.Log).Rep(rep, res.Reps)
		rows, err := s.groupRep(ctx, cs, &agg, rep, Verified(rep, res.Reps))
		if ctx.Err() != nil {
			return res, ctx.Err()
		}
		for i, r := range rows {
			if werr := s.write(r); werr != nil {
				return res, werr
			}
			switch {
			case r.Status != results.StatusOK:
				res.Errors++
			case i < len(cs):
				per[i] = append(per[i], r.Seconds)
			default:
				secs = append(secs, r.Seconds)
			}
		}
		if err != nil {
			res.Err = err
			break
		}
	}
	for i := range cs {
		if what, ok := s.summaryText(&cs[i], Result{Seconds: results.Describe(per[i]), Reps: res.Reps}); ok {
			s.progress(cs[i].Label, what)
		}
	}
	res.Seconds = results.Describe(secs)
	s.summary(&agg, res)
	return res, nil
}

// groupFailed writes the error rows of a group whose warm-up failed with
// err: one per case, then the aggregate's, which ends the configuration.
func (s *Sampler) groupFailed(cs []Case, agg Case, err error) error {
	for i := range cs {
		r := s.row(&cs[i], 0)
		r.Fail(err)
		s.progress(cs[i].Label, "failed: "+err.Error())
		if werr := s.write(r); werr != nil {
			return werr
		}
	}
	return s.fail(agg, 0, err)
}

// groupWarmup runs the group's discarded samples and returns the slowest
// case's seconds of the last; it stops early as warmup does.
func (s *Sampler) groupWarmup(ctx context.Context, cs []Case) (float64, error) {
	var warm float64
	for w := 0; w < s.Policy.Warmup; w++ {
		ProgressOf(s.Log).Warmup(w, s.Policy.Warmup)
		secs, _, errs := s.sampleAll(ctx, cs)
		warm = 0
		for i, err := range errs {
			if err != nil {
				return 0, fmt.Errorf("warm-up: %s: %w", cs[i].Label, err)
			}
			warm = max(warm, secs[i])
		}
		if b := s.Policy.Budget; b > 0 && warm*float64(w+2) > b.Seconds() {
			break
		}
	}
	return warm, nil
}

// sampleAll runs every case's Before, then times one sample of each at
// once, released together.
func (s *Sampler) sampleAll(ctx context.Context, cs []Case) ([]float64, []bool, []error) {
	secs, held, errs := make([]float64, len(cs)), make([]bool, len(cs)), make([]error, len(cs))
	for i := range cs {
		if cs[i].Before != nil {
			if err := cs[i].Before(); err != nil {
				errs[i] = fmt.Errorf("before the sample: %w", err)
			}
		}
	}
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range cs {
		if errs[i] == nil {
			wg.Go(func() {
				<-start
				secs[i], held[i], errs[i] = s.timed(ctx, &cs[i])
			})
		}
	}
	close(start)
	wg.Wait()
	return secs, held, errs
}

// groupRep runs one measured rep of the group and returns its rows, the
// cases' then the aggregate's; err is the first sample's own failure.
func (s *Sampler) groupRep(ctx context.Context, cs []Case, agg *Case, rep int, verify bool) ([]results.Row, error) {
	rows := make([]results.Row, len(cs)+1)
	for i := range cs {
		rows[i] = s.row(&cs[i], rep)
	}
	a := s.row(agg, rep)
	if verify {
		for i := range cs {
			if cs[i].Verify != nil && cs[i].Scrub != nil {
				if err := cs[i].Scrub(); err != nil {
					err = fmt.Errorf("scrub: %s: %w", cs[i].Label, err)
					a.Fail(err)
					rows[i].Fail(err)
					return append(rows[:i+1], a), err
				}
			}
		}
	}
	secs, held, errs := s.sampleAll(ctx, cs)
	var first error
	allHeld, worst := true, 0.0
	for i := range cs {
		if errs[i] != nil {
			rows[i].Fail(errs[i])
			s.progress(cs[i].Label, fmt.Sprintf("rep %d failed: %v", rep, errs[i]))
			if first == nil {
				first = errs[i]
			}
			continue
		}
		s.finish(&cs[i], &rows[i], rep, secs[i], held[i], verify)
		allHeld, worst = allHeld && held[i], max(worst, secs[i])
	}
	s.finish(agg, &a, rep, worst, allHeld, false)
	if verify && agg.Verify != nil {
		a.Set(results.ColVerified, true)
	}
	for i, r := range rows[:len(cs)] {
		if r.Status != results.StatusOK {
			a.Set(results.ColVerified, "")
			a.Fail(fmt.Errorf("%s: %s", cs[i].Label, r.Reason))
			break
		}
	}
	rows[len(cs)] = a
	return rows, first
}
