package cuda

import (
	"errors"
	"fmt"
	"math"
	"sync/atomic"
	"time"
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
//
// A Timer is a state machine:
//
//	idle --Start--> held (or running where it cannot hold)
//	held --Unhold, Queue past MaxOps, Guard's watchdog--> running
//	held, running --Stop--> idle (the sample's seconds)
//	held, running --Start--> held|running (the open sample is abandoned)
//
// Stop in idle is an error. The flag only ever grows: each hold waits for
// the flag to reach its own sequence number and releasing stores that
// number, so a Start that abandons a held sample never writes a lower
// value after a higher one (a flag set to 1 and back to 0 within a
// microsecond may never be seen by the GPU, leaving its wait blocked).
type Timer struct {
	s           *Stream
	start, stop *Event
	flag        *HostMem // nil: this timer does not hold
	// warm is a small device buffer and plan: one copy queued before the
	// start event of every sample, so the copy engine's first-copy set-up
	// (channel, context) falls outside the sample, as nvbandwidth does.
	warm     *DeviceMem
	warmPlan Plan
	flagDev  uint64
	// MaxOps caps the operations queued behind a hold.
	MaxOps int
	// GuardDelay is how long a call guarded by Guard may block while the
	// stream is held before the flag is set from another thread.
	GuardDelay time.Duration

	state timerState
	seq   uint32 // the flag value the current (or last) hold waits for
	held  bool   // the current sample has been held throughout
	ops   int
	fired bool // the last Guard let the stream go
}

// timerState is where a Timer is in a sample.
type timerState uint8

const (
	timerIdle    timerState = iota // no sample open
	timerHeld                      // a sample is open; the stream waits on the flag
	timerRunning                   // a sample is open; the stream runs
)

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
	if t.warm, err = s.c.AllocDevice(2 * warmCopyBytes); err != nil {
		t.Close()
		return nil, fmt.Errorf("timer warm-up buffer: %w", err)
	}
	t.warmPlan.Reset(1)
	t.warmPlan.Add(t.warm.Ptr()+warmCopyBytes, t.warm.Ptr(), warmCopyBytes)
	if hold && s.c.d.CanHoldStreams(info) {
		if t.flag, err = s.c.AllocHost(4, HostPortable|HostDeviceMap); err != nil {
			t.Close()
			return nil, fmt.Errorf("timer flag: %w", err)
		}
		if t.flagDev, err = t.flag.DevicePtr(); err != nil {
			t.Close()
			return nil, fmt.Errorf("timer flag: %w", err)
		}
		t.setFlag(0)
	}
	return t, nil
}

// warmCopyBytes is the size of the warm copy queued before each start
// event.
const warmCopyBytes = 256

// flagWord is the flag as a Go pointer to C memory.
func (t *Timer) flagWord() *uint32 { return (*uint32)(t.flag.ptr) }

func (t *Timer) setFlag(v uint32) {
	// The flag is C memory, written with a sequentially consistent store.
	atomic.StoreUint32(t.flagWord(), v)
}

// Guard runs f, a call that queues work on the held stream. Should f block
// (the driver's queue is full behind the hold, or the driver waits for the
// stream, as it may for pageable memory) for longer than GuardDelay, the
// flag is set from another thread so the stream, and f, move on; the
// sample is then not held. Without a hold Guard just runs f.
func (t *Timer) Guard(f func() error) error {
	t.fired = false
	if t.state != timerHeld {
		return f()
	}
	flag, seq := t.flagWord(), t.seq
	done := make(chan struct{})
	w := time.AfterFunc(t.GuardDelay, func() {
		defer close(done)
		atomic.StoreUint32(flag, seq)
	})
	err := f()
	if !w.Stop() {
		// The watchdog ran or is running: wait for its store, which let
		// the stream go.
		<-done
		t.state, t.held, t.fired = timerRunning, false, true
	}
	return err
}

// GuardFired reports whether the last Guard call blocked past GuardDelay
// and let the stream go: the work it queued did not fit behind a hold.
func (t *Timer) GuardFired() bool { return t.fired }

// Start begins a sample: holds the stream (when this timer holds) and
// records the start event. A sample still open is abandoned: its hold is
// released first.
func (t *Timer) Start() error {
	t.release()
	t.state, t.ops, t.held = timerIdle, 0, false
	if t.flag != nil {
		if err := t.nextSeq(); err != nil {
			return err
		}
		switch err := t.s.WaitFlag(t.flagDev, t.seq); {
		case err == nil:
			t.state, t.held = timerHeld, true
		case errors.Is(err, ErrUnsupported):
			_ = t.flag.Free()
			t.flag = nil
		default:
			return fmt.Errorf("hold stream: %w", err)
		}
	}
	if _, err := t.s.Copy(DeviceToDevice, PerCopy, &t.warmPlan); err != nil {
		t.release()
		t.state = timerIdle
		return fmt.Errorf("warm copy: %w", err)
	}
	if err := t.start.Record(t.s); err != nil {
		t.release()
		t.state = timerIdle
		return err
	}
	if t.state == timerIdle {
		t.state = timerRunning
	}
	return nil
}

// nextSeq advances the sequence number a hold waits for. Where it would
// wrap, the stream is drained first, so no wait can still read the flag,
// and the flag starts again from 0.
func (t *Timer) nextSeq() error {
	if t.seq == math.MaxUint32 {
		if err := t.s.Sync(); err != nil {
			return fmt.Errorf("hold stream: %w", err)
		}
		t.seq = 0
		t.setFlag(0)
	}
	t.seq++
	return nil
}

// Queue tells the timer that n more operations are about to be queued;
// past MaxOps it lets the stream go and the sample is not held.
func (t *Timer) Queue(n int) {
	t.ops += n
	if t.state == timerHeld && t.ops > t.MaxOps {
		t.Unhold()
	}
}

// Unhold lets the stream go before the sample's work is all queued; the
// sample then reports Held false.
func (t *Timer) Unhold() {
	if t.state == timerHeld {
		t.release()
		t.held = false
	}
}

// Holding reports whether the stream is held now.
func (t *Timer) Holding() bool { return t.state == timerHeld }

// release lets a held stream go: the flag reaches the hold's number.
func (t *Timer) release() {
	if t.state == timerHeld {
		t.setFlag(t.seq)
		t.state = timerRunning
	}
}

// Stop releases the stream, records the stop event, waits for it and
// returns the sample's seconds. Stop without a Start is an error.
func (t *Timer) Stop() (float64, error) {
	if t.state == timerIdle {
		return 0, errors.New("cuda: timer: Stop without Start")
	}
	t.release()
	t.state = timerIdle
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
	t.state = timerIdle
	var errs []error
	if t.start != nil {
		errs = append(errs, t.start.Destroy())
	}
	if t.stop != nil {
		errs = append(errs, t.stop.Destroy())
	}
	if t.flag != nil || t.warm != nil {
		// The stream may still read the flag or copy: drain it first.
		errs = append(errs, t.s.Sync())
	}
	if t.flag != nil {
		errs = append(errs, t.flag.Free())
	}
	if t.warm != nil {
		errs = append(errs, t.warm.Free())
		t.warm = nil
	}
	t.warmPlan.Free()
	return errors.Join(errs...)
}
