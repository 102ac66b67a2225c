package workload

import (
	"cmp"
	"slices"
)

// A window follows the working set of one window length: the distinct
// blocks referenced in the last w seconds, read off an LRU stack (they
// are its top, down to the first slot taken in the window), whose
// horizon must reach w back.
type window struct {
	w float64
	// mark is the number of s's marks (counting those it forgot) before
	// the window when s had been compacted compactions times: the window
	// only moves on, so it is found by stepping from there.
	mark, compactions int
}

// blocks returns the distinct blocks of s referenced in [t − w, t], in
// the stack's weights; t is the latest request's arrival.
func (w *window) blocks(s *stack, t float64) int64 {
	from := t - w.w
	i := max(w.mark-s.dropped, 0)
	if w.compactions != s.compactions {
		i, _ = slices.BinarySearchFunc(s.marks, from, func(m mark, t float64) int { return cmp.Compare(m.t, t) })
		w.compactions = s.compactions
	}
	for i < len(s.marks) && s.marks[i].t < from {
		i++
	}
	w.mark = s.dropped + i
	if i == len(s.marks) {
		return s.fromSlot(s.next)
	}
	return s.fromSlot(s.marks[i].slot)
}

// A WindowPoint is the working set of one window length at one time.
type WindowPoint struct {
	T      float64 // seconds since the first request
	Blocks float64 // distinct blocks referenced in [T − W, T], estimated under sampling
}

// A workingSet follows one window length over the trace, keeping one
// point per tenth of the window: the largest working set seen in it.
type workingSet struct {
	w      float64
	step   float64
	start  float64
	points []WindowPoint
	peak   float64
	open   bool // points[len-1] is the step still being filled
}

func (ws *workingSet) observe(t, blocks float64) {
	rel := t - ws.start
	ws.peak = max(ws.peak, blocks)
	n := len(ws.points)
	if ws.open && rel < ws.points[n-1].T+ws.step {
		ws.points[n-1].Blocks = max(ws.points[n-1].Blocks, blocks)
		return
	}
	stepStart := rel
	if ws.step > 0 {
		stepStart = float64(int64(rel/ws.step)) * ws.step
	}
	ws.points = append(ws.points, WindowPoint{T: stepStart, Blocks: blocks})
	ws.open = true
}
