package cuda

import (
	"sync/atomic"
	"testing"

	"github.com/kvtier/kvtier/cuda/cudatest"
)

// TestTimerStateMachine drives a holding timer through its transitions
// and checks, after each step, its state, whether the sample counts as
// held, and the flag: it never goes down, so a hold released by a Start
// that abandons a sample stays released whenever the GPU looks.
func TestTimerStateMachine(t *testing.T) {
	libs := cudatest.Build(t)
	d, err := Open(libs.CUDA)
	if err != nil {
		t.Fatal(err)
	}
	c, err := d.PrimaryContext(0)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Release()
	s, err := c.NewStream()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Destroy()
	info, err := d.Device(0)
	if err != nil {
		t.Fatal(err)
	}
	tm, err := NewTimer(s, info, true)
	if err != nil {
		t.Fatal(err)
	}
	defer tm.Close()
	if tm.flag == nil {
		t.Fatal("the fake device cannot hold a stream")
	}
	start := func() error { return tm.Start() }
	stop := func() error { _, err := tm.Stop(); return err }
	unhold := func() error { tm.Unhold(); return nil }
	steps := []struct {
		name    string
		do      func() error
		wantErr bool
		state   timerState
		held    bool
		flag    uint32
	}{
		{"stop before any start", stop, true, timerIdle, false, 0},
		{"start holds", start, false, timerHeld, true, 0},
		{"start again abandons the held sample", start, false, timerHeld, true, 1},
		{"stop releases", stop, false, timerIdle, true, 2},
		{"stop twice", stop, true, timerIdle, true, 2},
		{"start", start, false, timerHeld, true, 2},
		{"unhold", unhold, false, timerRunning, false, 3},
		{"start while running", start, false, timerHeld, true, 3},
		{"stop", stop, false, timerIdle, true, 4},
	}
	var last uint32
	for _, st := range steps {
		err := st.do()
		flag := atomic.LoadUint32(tm.flagWord())
		if (err != nil) != st.wantErr || tm.state != st.state || tm.Held() != st.held || flag != st.flag {
			t.Fatalf("%s: err %v, state %d, held %v, flag %d; want error %v, state %d, held %v, flag %d",
				st.name, err, tm.state, tm.Held(), flag, st.wantErr, st.state, st.held, st.flag)
		}
		if flag < last {
			t.Fatalf("%s: the flag went down from %d to %d", st.name, last, flag)
		}
		last = flag
	}
}
