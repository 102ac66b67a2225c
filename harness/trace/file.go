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
	for n := 0; ; n++ {
		if n%1024 == 0 && ctx.Err() != nil {
			return nil, ctx.Err()
		}
		req, err := r.NextContext(ctx)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if err := a.Add(req); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
	}
	st := r.Stats()
	if st.Requests == 0 {
		return nil, fmt.Errorf("%s: %w (%d lines; %s)", path, workload.ErrNoRequests, st.Lines, st.BadLines())
	}
	return &Result{Path: path, Model: model, Read: st, Analysis: a.Finish(st.BlockTokens)}, nil
}
