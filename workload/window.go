package workload

// A window follows the working set of one window length: the distinct
// blocks referenced in the last w seconds, read off an LRU stack (they
// are its top, down to the first slot taken in the window).
type window struct {
	w      float64
	starts []windowStart // requests still in the window, oldest first
	head   int
}

// A windowStart is a request's arrival and the stack's reference count
// before it.
type windowStart struct {
	t   float64
	ref int64
}

// arrive records a request arriving at t (non-decreasing) whose first
// reference will be number ref of the stack.
func (w *window) arrive(t float64, ref int64) {
	w.starts = append(w.starts, windowStart{t, ref})
}

// blocks returns the distinct blocks of s referenced in [t − w, t], in
// the stack's weights.
func (w *window) blocks(s *stack, t float64) int64 {
	for w.head < len(w.starts)-1 && w.starts[w.head].t < t-w.w {
		w.head++
	}
	// Reclaim the dropped prefix once it is half the queue.
	if w.head > 1024 && w.head*2 > len(w.starts) {
		n := copy(w.starts, w.starts[w.head:])
		w.starts = w.starts[:n]
		w.head = 0
	}
	return s.since(w.starts[w.head].ref)
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
