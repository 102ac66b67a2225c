package workload

import (
	"bytes"
	"math"
	"slices"
	"testing"
	"time"
)

func smallGen(seed uint64) GenOptions {
	o := DefaultGenOptions()
	o.Sessions, o.Turns, o.SystemPrompts, o.Seed = 40, 4, 2, seed
	return o
}

func TestGenerateTrace(t *testing.T) {
	t.Parallel()
	var a, b, c bytes.Buffer
	st, err := Generate(&a, smallGen(7))
	if err != nil {
		t.Fatal(err)
	}
	Generate(&b, smallGen(7))
	Generate(&c, smallGen(8))
	if !bytes.Equal(a.Bytes(), b.Bytes()) || bytes.Equal(a.Bytes(), c.Bytes()) {
		t.Fatal("the same seed must give the same trace, another seed another")
	}
	reqs, rs := readAll(t, a.Bytes(), Options{Reorder: 1})
	if rs.Format != Mooncake || rs.Malformed != 0 || len(reqs) != st.Requests || rs.Sessions != 40 || !rs.SessionsKnown {
		t.Fatalf("read back %d requests (%+v), generated %+v", len(reqs), rs, st)
	}
	refs := 0
	bySession := map[int][]*Request{}
	for _, r := range reqs {
		refs += len(r.Hashes)
		if len(r.Hashes) != r.Blocks() {
			t.Errorf("line %d: %d ids for %d blocks", r.Line, len(r.Hashes), r.Blocks())
		}
		bySession[r.Session] = append(bySession[r.Session], r)
	}
	if refs != st.BlockRefs {
		t.Errorf("%d references read, %d generated", refs, st.BlockRefs)
	}
	// Each turn's prompt extends the previous prompt and its answer:
	// every full block of the previous prompt is a prefix of this one's
	// ids, and the gap to the parent is the think time.
	for _, rs := range bySession {
		for i := 1; i < len(rs); i++ {
			prev, cur := rs[i-1], rs[i]
			full := prev.Input / prev.BlockTokens
			if !slices.Equal(prev.Hashes[:full], cur.Hashes[:full]) || cur.Input <= prev.Input+prev.Output {
				t.Fatalf("session %d turn %d does not extend turn %d", cur.Session, cur.Turn, prev.Turn)
			}
			if cur.Parent != prev.Index || math.Abs(cur.Think-(cur.Time-prev.Time)) > 1e-9 || cur.Turn != prev.Turn+1 {
				t.Errorf("turn %d: parent %d think %g", cur.Turn, cur.Parent, cur.Think)
			}
		}
	}
	// Two system prompts of 4 blocks: sessions share them.
	an := analyseAll(t, reqs, AnalyzeOptions{BytesPerToken: 1})
	if !(an.ReuseShared > 0) || !(an.ReuseIntra > 0.5) || an.Sessions != 40 {
		t.Errorf("reuse intra %g shared %g over %d sessions", an.ReuseIntra, an.ReuseShared, an.Sessions)
	}
}

func TestGenerateOptions(t *testing.T) {
	t.Parallel()
	o := DefaultGenOptions()
	o.Sessions, o.Turns, o.Think, o.BlockTokens = 0, 0, -time.Second, 0
	err := o.Validate()
	for _, f := range []string{"sessions", "turns", "think", "trace-block"} {
		if err == nil || !bytes.Contains([]byte(err.Error()), []byte(f+":")) {
			t.Errorf("no %s error in %v", f, err)
		}
	}
}

// TestGenerateFixed checks that fixed sessions all have the same shape:
// Turns turns, each adding exactly TurnTokens to the previous prompt and
// its OutputTokens answer.
func TestGenerateFixed(t *testing.T) {
	t.Parallel()
	o := smallGen(3)
	o.Fixed, o.SystemTokens, o.TurnTokens, o.OutputTokens = true, 1000, 300, 70
	var buf bytes.Buffer
	if _, err := Generate(&buf, o); err != nil {
		t.Fatal(err)
	}
	reqs, _ := readAll(t, buf.Bytes(), Options{})
	turns := map[int]int{}
	for _, r := range reqs {
		turns[r.Session]++
		want := o.SystemTokens + (r.Turn-1)*(o.TurnTokens+o.OutputTokens) + o.TurnTokens
		if r.Input != want || r.Output != o.OutputTokens {
			t.Fatalf("session %d turn %d: input %d output %d, want %d and %d", r.Session, r.Turn, r.Input, r.Output, want, o.OutputTokens)
		}
	}
	for s, n := range turns {
		if n != o.Turns {
			t.Errorf("session %d has %d turns, want %d", s, n, o.Turns)
		}
	}
	if len(turns) != o.Sessions {
		t.Errorf("%d sessions, want %d", len(turns), o.Sessions)
	}
}
