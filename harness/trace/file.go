package trace

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/kvtier/kvtier/workload"
)

// AnalyzeFile reads the trace at path (gzip or not) and analyses it in
// one pass, streaming: memory grows with the distinct blocks and the
// reorder window, not with the file. model names the geometry in rows. A
// trace with no usable request is workload.ErrNoRequests, with the malformed lines
// said; a line out of order beyond the window or a read error ends it
// with an error.
func AnalyzeFile(ctx context.Context, path, model string, ro workload.Options, ao workload.AnalyzeOptions) (*Result, error) {
	r, err := workload.Open(path, ro)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	a, err := workload.NewAnalyzer(ao)
	if err != nil {
		return nil, err
	}
	ctx, stop := context.WithCancel(ctx)
	batches := readAhead(ctx, r)
	defer func() {
		stop()
		for range batches { // the reader is done with r before Close
		}
	}()
	for b := range batches {
		for _, req := range b.reqs {
			if err := a.Add(req); err != nil {
				return nil, fmt.Errorf("%s: %w", path, err)
			}
		}
		if b.err != nil && !errors.Is(b.err, io.EOF) {
			return nil, fmt.Errorf("%s: %w", path, b.err)
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	st := r.Stats()
	if st.Requests == 0 {
		return nil, fmt.Errorf("%s: %w (%d lines; %s)", path, workload.ErrNoRequests, st.Lines, st.BadLines())
	}
	return &Result{Path: path, Model: model, Read: st, Analysis: a.Finish(st.BlockTokens)}, nil
}

// A batch is requests read in order; err, when set, ended the reading
// after them (io.EOF at the end of the trace).
type batch struct {
	reqs []*workload.Request
	err  error
}

// batchLen is how many requests a batch holds: enough that handing one
// over costs nothing beside analysing it, few enough to hold little.
const batchLen = 256

// readAhead reads r on a goroutine of its own and hands its requests
// over in batches, so that decoding the next lines overlaps analysing
// these: on two cores a trace is read in about the time its analysis
// takes. The channel closes after the batch that carries an error (EOF
// included), or once ctx is done; at most a few batches wait in it.
func readAhead(ctx context.Context, r *workload.Reader) <-chan batch {
	out := make(chan batch, 4)
	go func() {
		defer close(out)
		for {
			b := batch{reqs: make([]*workload.Request, 0, batchLen)}
			for len(b.reqs) < batchLen && b.err == nil {
				var req *workload.Request
				if req, b.err = r.NextContext(ctx); b.err == nil {
					b.reqs = append(b.reqs, req)
				}
			}
			select {
			case out <- b:
			case <-ctx.Done():
				return
			}
			if b.err != nil {
				return
			}
		}
	}()
	return out
}
