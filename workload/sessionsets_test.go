package workload

import (
	"math/rand/v2"
	"testing"
)

// sessionSets answers as a plain set of (session, block) pairs would,
// also for sessions that reference more shared blocks than they list.
func TestSessionSets(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name             string
		sessions, blocks int
	}{
		{"few shared blocks", 50, 400},
		{"sessions past their list", 3, 200},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := newSessionSets()
			s.grow(tc.blocks)
			plain := map[[2]int]bool{}
			users := map[int32]map[int]bool{}
			rng := rand.New(rand.NewPCG(1, uint64(tc.sessions)))
			for i := range 20000 {
				sess, b := rng.IntN(tc.sessions), int32(rng.IntN(tc.blocks))
				if got, want := s.referenced(sess, b), plain[[2]int{sess, int(b)}]; got != want {
					t.Fatalf("step %d: session %d block %d referenced %v, want %v", i, sess, b, got, want)
				}
				s.add(sess, b)
				plain[[2]int{sess, int(b)}] = true
				if users[b] == nil {
					users[b] = map[int]bool{}
				}
				users[b][sess] = true
				if s.count(b) != len(users[b]) {
					t.Fatalf("step %d: block %d has %d sessions, want %d", i, b, s.count(b), len(users[b]))
				}
			}
			if tc.sessions == 3 && len(s.pairs) == 0 {
				t.Error("no session went past its list")
			}
		})
	}
}
