package trace

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/kvtier/kvtier/workload"
)

// generatedTrace writes a generated trace of a few thousand requests,
// many batches of the read-ahead, and returns its path and text.
func generatedTrace(t *testing.T) (string, []byte) {
	t.Helper()
	o := workload.DefaultGenOptions()
	o.Sessions = 200
	var buf bytes.Buffer
	if _, err := workload.Generate(&buf, o); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "gen.jsonl")
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path, buf.Bytes()
}

// analyzeSerially is AnalyzeFile's analysis without the read-ahead.
func analyzeSerially(t *testing.T, text []byte, ao workload.AnalyzeOptions) *workload.Analysis {
	t.Helper()
	r, err := workload.NewReader(bytes.NewReader(text), "serial", workload.Options{})
	if err != nil {
		t.Fatal(err)
	}
	a, err := workload.NewAnalyzer(ao)
	if err != nil {
		t.Fatal(err)
	}
	for {
		req, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if err := a.Add(req); err != nil {
			t.Fatal(err)
		}
	}
	return a.Finish(r.Stats().BlockTokens)
}

// TestAnalyzeFileReadsAhead: reading on a goroutine of its own hands
// the analysis every request, in order, so the analysis is the one a
// plain loop gives, also under SHARDS sampling.
func TestAnalyzeFileReadsAhead(t *testing.T) {
	t.Parallel()
	path, text := generatedTrace(t)
	var seen []int
	ao := workload.AnalyzeOptions{BytesPerToken: 2, Windows: []float64{60},
		OnRequest: func(r *workload.Request, _ *workload.Hits) { seen = append(seen, r.Index) }}
	res, err := AnalyzeFile(context.Background(), path, "m", workload.Options{}, ao)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(seen); n < 5*batchLen || res.Read.Requests != n {
		t.Fatalf("%d requests seen, %d read; want the same, over %d", n, res.Read.Requests, 5*batchLen)
	}
	for i, idx := range seen {
		if idx != i {
			t.Fatalf("request %d seen as the %dth", idx, i)
		}
	}
	for _, sample := range []float64{0, 0.1} {
		ao := workload.AnalyzeOptions{BytesPerToken: 2, Windows: []float64{60}, Sample: sample}
		res, err := AnalyzeFile(context.Background(), path, "m", workload.Options{}, ao)
		if err != nil {
			t.Fatal(err)
		}
		if want := analyzeSerially(t, text, ao); !reflect.DeepEqual(res.Analysis, want) {
			t.Errorf("sample %g: the analysis read ahead differs from the serial one", sample)
		}
	}
}

// TestAnalyzeFileStops: an error the reader meets past many batches, or
// an interrupt while the analysis runs, ends AnalyzeFile with that
// error; AnalyzeFile waits for the reading goroutine before it returns.
func TestAnalyzeFileStops(t *testing.T) {
	t.Parallel()
	_, text := generatedTrace(t)
	ls := strings.Split(strings.TrimSpace(string(text)), "\n")
	// A line far earlier than the window: the reader refuses it.
	bad := append(append([]string{}, ls[:4*batchLen]...), mooncake(0, 1024, "1"))
	bad = append(bad, ls[4*batchLen:]...)
	path := filepath.Join(t.TempDir(), "late.jsonl")
	if err := os.WriteFile(path, lines(bad...), 0o644); err != nil {
		t.Fatal(err)
	}
	ao := workload.AnalyzeOptions{BytesPerToken: 2}
	_, err := AnalyzeFile(context.Background(), path, "m", workload.Options{Reorder: 16}, ao)
	if err == nil || !strings.Contains(err.Error(), "line ") || !strings.Contains(err.Error(), "reorder") {
		t.Errorf("a line out of order past the window: %v", err)
	}
	good := filepath.Join(t.TempDir(), "good.jsonl")
	if err := os.WriteFile(good, text, 0o644); err != nil {
		t.Fatal(err)
	}
	n := 0
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ao.OnRequest = func(*workload.Request, *workload.Hits) {
		if n++; n == 3*batchLen {
			cancel()
		}
	}
	if _, err := AnalyzeFile(ctx, good, "m", workload.Options{}, ao); !errors.Is(err, context.Canceled) {
		t.Errorf("interrupted after %d requests: %v, want context.Canceled", n, err)
	}
	if n >= len(ls) {
		t.Errorf("interrupted, yet all %d requests were analysed", n)
	}
}
