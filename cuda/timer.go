package cuda

import (
	"errors"
	"fmt"
	"sync/atomic"
	"time"
	"unsafe"
)

// DefaultMaxHeldOps is how many operations a Timer lets queue behind a
// held stream before it lets the stream go. The driver's queue of pending
// work per stream is bounded (thousands of entries): a host that queues
// more behind a wait only it can release blocks forever.
const DefaultMaxHeldOps = 512

// DefaultGuardDelay is Timer.GuardDelay's default.
const DefaultGuardDelay = 500 * time.Millisecond

// A Timer times samples on a stream as nvbandwidth does: the stream waits
// on a host-mapped flag (cuStreamWaitValue32) while the sample's work is
// queued, a start event follows the wait, the host sets the flag when all
// is queued, and a stop event closes the sample. The elapsed time is
// cuEventElapsedTime, so host launch cost stays out. Where the device
// cannot hold a stream, or a sample queues more than MaxOps operations,
// or the work must not be queued behind a hold (pageable copies, which
// the driver may stage synchronously), the sample runs unheld and Held
// reports false.
type Timer struct {
	s           *Stream
	start, stop *Event
	flag        *HostMem // nil: this timer does not hold
	flagDev     uint64
	// MaxOps caps the operations queued behind a hold.
	MaxOps int
	// GuardDelay is how long a call guarded by Guard may block while the
	// stream is held before the flag is set from another thread.
	GuardDelay time.Duration

	holding bool // the stream waits on the flag now
	held    bool // the current sample has been held throughout
	ops     int
	fired   bool // the last Guard let the stream go
}

// NewTimer makes a timer on s. With hold, it holds the stream where the
// device can (Driver.CanHoldStreams).
func NewTimer(s *Stream, info DeviceInfo, hold bool) (*Timer, error) {
	t := &Timer{s: s, MaxOps: DefaultMaxHeldOps, GuardDelay: DefaultGuardDelay}
	var err error
	if t.start, err = s.c.NewEvent(); err != nil {
		return nil, err
	}
	if t.stop, err = s.c.NewEvent(); err != nil {
		t.Close()
		return nil, err
	}
	if hold && s.c.d.CanHoldStreams(info) {
		if t.flag, err = s.c.AllocHost(4, HostPortable|HostDeviceMap); err != nil {
			t.Close()
			return nil, fmt.Errorf("timer flag: %w", err)
		}
		if t.flagDev, err = t.flag.DevicePtr(); err != nil {
			t.Close()
			return nil, fmt.Errorf("timer flag: %w", err)
		}
	}
	return t, nil
}

func (t *Timer) setFlag(v uint32) {
	// The flag is C memory, written with a sequentially consistent store.
	atomic.StoreUint32((*uint32)(unsafe.Pointer(t.flag.ptr)), v)
}

// Guard runs f, a call that queues work on the held stream. Should f block
// (the driver's queue is full behind the hold, or the driver waits for the
// stream, as it may for pageable memory) for longer than GuardDelay, the
// flag is set from another thread so the stream, and f, move on; the
// sample is then not held. Without a hold Guard just runs f.
func (t *Timer) Guard(f func() error) error {
	t.fired = false
	if !t.holding {
		return f()
	}
	flag := (*uint32)(t.flag.ptr)
	done := make(chan struct{})
	w := time.AfterFunc(t.GuardDelay, func() {
		defer close(done)
		atomic.StoreUint32(flag, 1)
	})
	err := f()
	if !w.Stop() {
		// The watchdog ran or is running: wait for its store, which let
		// the stream go.
		<-done
		t.holding, t.held, t.fired = false, false, true
	}
	return err
}

// GuardFired reports whether the last Guard call blocked past GuardDelay
// and let the stream go: the work it queued did not fit behind a hold.
func (t *Timer) GuardFired() bool { return t.fired }

// Start begins a sample: holds the stream (when this timer holds) and
// records the start event.
func (t *Timer) Start() error {
	t.release()
	t.ops, t.held = 0, false
	if t.flag != nil {
		t.setFlag(0)
		switch err := t.s.WaitFlag(t.flagDev, 1); {
		case err == nil:
			t.holding, t.held = true, true
		case errors.Is(err, ErrUnsupported):
			_ = t.flag.Free()
			t.flag = nil
		default:
			return fmt.Errorf("hold stream: %w", err)
		}
	}
	if err := t.start.Record(t.s); err != nil {
		t.release()
		return err
	}
	return nil
}

// Queue tells the timer that n more operations are about to be queued;
// past MaxOps it lets the stream go and the sample is not held.
func (t *Timer) Queue(n int) {
	t.ops += n
	if t.holding && t.ops > t.MaxOps {
		t.Unhold()
	}
}

// Unhold lets the stream go before the sample's work is all queued; the
// sample then reports Held false.
func (t *Timer) Unhold() {
	if t.holding {
		t.release()
		t.held = false
	}
}

// Holding reports whether the stream is held now.
func (t *Timer) Holding() bool { return t.holding }

func (t *Timer) release() {
	if t.holding {
		t.setFlag(1)
		t.holding = false
	}
}

// Stop releases the stream, records the stop event, waits for it and
// returns the sample's seconds.
func (t *Timer) Stop() (float64, error) {
	t.release()
	if err := t.stop.Record(t.s); err != nil {
		return 0, err
	}
	return Elapsed(t.start, t.stop)
}

// Held reports whether the last sample was held until all its work was
// queued (the "held" row column).
func (t *Timer) Held() bool { return t.held }

// Close releases the stream if held and frees the timer's resources.
func (t *Timer) Close() error {
	t.release()
	var errs []error
	if t.start != nil {
		errs = append(errs, t.start.Destroy())
	}
	if t.stop != nil {
		errs = append(errs, t.stop.Destroy())
	}
	if t.flag != nil {
		// The stream may still read the flag: drain it first.
		errs = append(errs, t.s.Sync(), t.flag.Free())
	}
	return errors.Join(errs...)
}
