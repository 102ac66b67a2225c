package loadcheck

import (
	"runtime"
	"testing"
	"time"
)

// The probe counts its wake-ups, and a goroutine kept from running shows
// as lateness.
func TestProbe(t *testing.T) {
	p := Start()
	time.Sleep(50 * time.Millisecond)
	// Hold every P for 100 ms: the probe cannot run, and wakes late.
	prev := runtime.GOMAXPROCS(1)
	defer runtime.GOMAXPROCS(prev)
	for end := time.Now().Add(100 * time.Millisecond); time.Now().Before(end); {
	}
	r := p.Stop()
	if r.Wakeups < 2 {
		t.Errorf("%d wake-ups in 150 ms", r.Wakeups)
	}
	if r.Worst < 5*time.Millisecond || !r.Busy(5*time.Millisecond, time.Hour) {
		t.Errorf("worst lateness %v while the only P spun for 100 ms", r.Worst)
	}
	t.Log(r)
}
