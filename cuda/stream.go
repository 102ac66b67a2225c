package cuda

import (
	"fmt"

	"github.com/kvtier/kvtier/csrc/cudawrap"
)

// A handle is a stream or an event of a context.
type handle[H comparable] struct {
	c *Context
	h H
}

// newHandle makes a stream or an event T in c by create, the driver
// call.
func newHandle[T ~struct{ handle[H] }, H comparable](c *Context, create func(cudawrap.Ctx) (H, cudawrap.Status)) (*T, error) {
	h, st := create(c.ctx)
	if err := c.d.err(st); err != nil {
		return nil, err
	}
	return &T{handle[H]{c: c, h: h}}, nil
}

// release destroys the stream or event by destroy, once: a second call
// finds it gone and does nothing.
func (x *handle[H]) release(destroy func(cudawrap.Ctx, H) cudawrap.Status) error {
	h, ok := take(&x.h)
	if !ok {
		return nil
	}
	return x.c.d.err(destroy(x.c.ctx, h))
}

// take returns what *p holds and whether it held anything, leaving the
// zero value: a handle released this way is released once.
func take[H comparable](p *H) (H, bool) {
	var none H
	h := *p
	*p = none
	return h, h != none
}

// A Stream is a non-blocking CUDA stream of the context.
type Stream struct{ handle[cudawrap.Stream] }

// NewStream creates a stream that does not synchronise with the legacy
// NULL stream (cuMemcpyBatchAsync refuses that one).
func (c *Context) NewStream() (*Stream, error) { return newHandle[Stream](c, c.d.l.StreamCreate) }

// Sync waits for all work on the stream.
func (s *Stream) Sync() error {
	return s.c.d.err(s.c.d.l.StreamSync(s.c.ctx, s.h))
}

// Destroy releases the stream (queued work still completes).
func (s *Stream) Destroy() error { return s.release(s.c.d.l.StreamDestroy) }

// WaitFlag makes the stream wait until the 32-bit word at device address
// flag is at least v (cuStreamWaitValue32). ErrUnsupported without it.
func (s *Stream) WaitFlag(flag uint64, v uint32) error {
	return s.c.d.err(s.c.d.l.StreamWait32(s.c.ctx, s.h, flag, v))
}

// An Event is a timing event.
type Event struct{ handle[cudawrap.Event] }

// NewEvent creates a timing event.
func (c *Context) NewEvent() (*Event, error) { return newHandle[Event](c, c.d.l.EventCreate) }

// Record queues the event on s.
func (ev *Event) Record(s *Stream) error {
	return ev.c.d.err(ev.c.d.l.EventRecord(ev.c.ctx, ev.h, s.h))
}

// Elapsed waits for stop and returns the seconds from start to stop.
func Elapsed(start, stop *Event) (float64, error) {
	c := stop.c
	ms, st := c.d.l.EventElapsed(c.ctx, start.h, stop.h)
	if err := c.d.err(st); err != nil {
		return 0, err
	}
	return float64(ms) / 1e3, nil
}

// Destroy releases the event.
func (ev *Event) Destroy() error { return ev.release(ev.c.d.l.EventDestroy) }

// A Dir is the direction of a copy plan.
type Dir int

// Directions.
const (
	HostToDevice   Dir = cudawrap.H2D
	DeviceToHost   Dir = cudawrap.D2H
	DeviceToDevice Dir = cudawrap.D2D
)

// String returns "H2D", "D2H" or "D2D".
func (d Dir) String() string {
	switch d {
	case HostToDevice:
		return "H2D"
	case DeviceToHost:
		return "D2H"
	case DeviceToDevice:
		return "D2D"
	}
	return fmt.Sprintf("Dir(%d)", int(d))
}

// A How is the way a plan is issued.
type How int

// Ways to issue a plan.
const (
	// PerCopy issues one cuMemcpy*Async per copy (all in one cgo call).
	PerCopy How = cudawrap.PerCopy
	// Batch issues the plan as one cuMemcpyBatchAsync (CUDA 12.8+).
	Batch How = cudawrap.BatchAPI
)

// A Plan is a list of copies held in C memory, so one cgo call can issue
// it without passing Go pointers. Reuse a Plan across samples; Free it
// at the end.
type Plan struct {
	p cudawrap.Plan
}

// Reset empties the plan and makes room for n copies.
func (p *Plan) Reset(n int) { p.p.Reset(n) }

// Add appends a copy of n bytes from address src to address dst (device
// pointers or host addresses as the plan's direction says).
func (p *Plan) Add(dst, src uint64, n int64) { p.p.Add(dst, src, n) }

// Len is the number of copies in the plan.
func (p *Plan) Len() int { return p.p.Len() }

// Free releases the plan's C memory.
func (p *Plan) Free() { p.p.Free() }

// Copy enqueues the plan on s in one cgo call and returns how many copies
// were issued before an error. Batch returns ErrUnsupported where the
// driver lacks cuMemcpyBatchAsync.
func (s *Stream) Copy(dir Dir, how How, p *Plan) (int, error) {
	if err := p.p.Err(); err != nil {
		return 0, err
	}
	if p.Len() == 0 {
		return 0, nil
	}
	done, st := s.c.d.l.CopyPlan(s.c.ctx, s.h, s.c.ordinal, int(dir), int(how), &p.p)
	if err := s.c.d.err(st); err != nil {
		return done, fmt.Errorf("%s copy %d of %d: %w", dir, done, p.Len(), err)
	}
	return done, nil
}
