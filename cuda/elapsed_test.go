package cuda_test

import (
	"testing"

	"github.com/kvtier/kvtier/cuda"
	"github.com/kvtier/kvtier/cuda/cudatest"
)

// TestEventElapsedTimeABI: cuEventElapsedTime is asked for at the _v2
// ABI (12080) where the driver offers it and at 2000 below, and events
// time a sample either way.
func TestEventElapsedTimeABI(t *testing.T) {
	for _, c := range []struct {
		version string
		want    int
	}{{"12080", 12080}, {"13000", 12080}, {"12040", 2000}} {
		t.Run(c.version, func(t *testing.T) {
			d, libs := open(t, map[string]string{"FAKECUDA_VERSION": c.version})
			if got, err := cudatest.ProcABI(libs, "cuEventElapsedTime"); err != nil || got != c.want {
				t.Errorf("cuEventElapsedTime asked at ABI %d (%v), want %d", got, err, c.want)
			}
			_, s := context(t, d)
			info, _ := d.Device(0)
			tm, err := cuda.NewTimer(s, info, true)
			if err != nil {
				t.Fatal(err)
			}
			defer tm.Close()
			if err := tm.Start(); err != nil {
				t.Fatal(err)
			}
			if sec, err := tm.Stop(); err != nil || sec <= 0 {
				t.Errorf("timed %g s, %v", sec, err)
			}
		})
	}
}

// TestTimerWarmCopy: each sample queues one small copy before its start
// event (the copy engine's first-copy set-up stays outside the sample):
// the fake corrupts the first async copy, which must be that warm copy
// and not the sample's own first.
func TestTimerWarmCopy(t *testing.T) {
	d, _ := open(t, map[string]string{"FAKECUDA_CORRUPT_COPY_AT": "0"})
	c, s := context(t, d)
	info, _ := d.Device(0)
	tm, err := cuda.NewTimer(s, info, true)
	if err != nil {
		t.Fatal(err)
	}
	defer tm.Close()
	dst, src := sides(t, c, cuda.HostToDevice, len(perm))
	var p cuda.Plan
	defer p.Free()
	scatter(&p, dst.addr, src.addr, perm)
	if err := tm.Start(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Copy(cuda.HostToDevice, cuda.PerCopy, &p); err != nil {
		t.Fatal(err)
	}
	if _, err := tm.Stop(); err != nil {
		t.Fatal(err)
	}
	if err := verify(t, dst, perm); err != nil {
		t.Errorf("the sample's first copy was the first on the stream: %v", err)
	}
}
