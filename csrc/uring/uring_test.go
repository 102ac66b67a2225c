package uring

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"unsafe"

	"github.com/kvtier/kvtier/diskio/disktest"
)

// open returns a ring or skips the test where the kernel refuses one.
func open(t *testing.T, entries int) *Ring {
	t.Helper()
	r, err := Open(entries)
	if errors.Is(err, syscall.ENOSYS) || errors.Is(err, syscall.EPERM) {
		t.Skipf("io_uring refused here: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

// dataFile writes n random bytes to a new file and returns it, open.
func dataFile(t *testing.T, n int) (*os.File, []byte) {
	t.Helper()
	data := make([]byte, n)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range data {
		data[i] = byte(rng.Uint32())
	}
	path := filepath.Join(t.TempDir(), "data")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f, data
}

func TestReqLayout(t *testing.T) {
	t.Parallel()
	var r Req
	got := []uintptr{unsafe.Offsetof(r.Off), unsafe.Offsetof(r.Addr), unsafe.Offsetof(r.Len), unsafe.Offsetof(r.Buf), unsafe.Sizeof(r)}
	want := []uintptr{0, 8, 16, 20, 24}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("Req layout %v, want %v (the C kv_uring_req)", got, want)
		}
	}
}

// TestReadMatchesPread reads scattered chunks into scattered places of a
// buffer, registered and not, at several depths, and compares every byte
// with what pread returns for the same ranges.
func TestReadMatchesPread(t *testing.T) {
	t.Parallel()
	const chunk, chunks = 4096, 300
	f, _ := dataFile(t, chunk*chunks*2)
	for _, tc := range []struct {
		name       string
		depth      int
		registered bool
	}{
		{"depth1", 1, false}, {"depth8", 8, false}, {"depth32-fixed", 32, true}, {"depth-over-ring", 1000, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := open(t, 64)
			buf := disktest.Buffer(t, chunk*chunks)
			rng := rand.New(rand.NewPCG(3, uint64(tc.depth)))
			src := rng.Perm(chunks * 2)[:chunks]
			dst := rng.Perm(chunks)
			reqs := make([]Req, chunks)
			bufIdx := int32(-1)
			if tc.registered {
				if err := r.Register([][]byte{buf}); err != nil {
					t.Fatal(err)
				}
				bufIdx = 0
			}
			for i := range reqs {
				reqs[i] = Req{Off: uint64(src[i] * chunk), Addr: uintptr(unsafe.Pointer(&buf[dst[i]*chunk])), Len: chunk, Buf: bufIdx}
			}
			if err := r.Read(int(f.Fd()), reqs, tc.depth); err != nil {
				t.Fatal(err)
			}
			want := make([]byte, chunk)
			for i := range reqs {
				if _, err := f.ReadAt(want, int64(src[i]*chunk)); err != nil {
					t.Fatal(err)
				}
				if got := buf[dst[i]*chunk : (dst[i]+1)*chunk]; !bytes.Equal(got, want) {
					t.Fatalf("request %d: ring read differs from pread", i)
				}
			}
		})
	}
}

// TestReadFailures checks that a failing request is named: a read past
// the end of a truncated file (short), a bad descriptor, and a fixed read
// outside the registered buffer.
func TestReadFailures(t *testing.T) {
	t.Parallel()
	f, _ := dataFile(t, 8192)
	r := open(t, 8)
	buf := disktest.Buffer(t, 3*4096)
	addr := func(i int) uintptr { return uintptr(unsafe.Pointer(&buf[i*4096])) }
	short := []Req{{Off: 0, Addr: addr(0), Len: 4096, Buf: -1}, {Off: 4096, Addr: addr(1), Len: 4096, Buf: -1}, {Off: 6144, Addr: addr(2), Len: 4096, Buf: -1}}
	var ue *Error
	err := r.Read(int(f.Fd()), short, 2)
	if !errors.As(err, &ue) || !ue.Short || ue.Index != 2 || ue.Got != 2048 {
		t.Fatalf("short read: %v, want request 2 short by half", err)
	}
	err = r.Read(-1, short[:1], 1)
	if !errors.As(err, &ue) || !errors.Is(err, syscall.EBADF) || ue.Index != 0 {
		t.Fatalf("bad fd: %v, want EBADF on request 0", err)
	}
	if err := r.Register([][]byte{buf[:4096]}); err != nil {
		t.Fatal(err)
	}
	err = r.Read(int(f.Fd()), []Req{{Off: 0, Addr: addr(1), Len: 4096, Buf: 0}}, 1)
	if !errors.Is(err, syscall.EFAULT) {
		t.Fatalf("fixed read outside the registered buffer: %v, want EFAULT", err)
	}
	// The ring still works after failures.
	if err := r.Read(int(f.Fd()), short[:2], 2); err != nil {
		t.Fatalf("after failures: %v", err)
	}
}

func TestBadArguments(t *testing.T) {
	t.Parallel()
	if _, err := Open(0); err == nil {
		t.Error("Open(0) succeeded")
	}
	r := open(t, 4)
	if err := r.Register([][]byte{nil}); err == nil {
		t.Error("registering an empty buffer succeeded")
	}
	r.Close()
	if err := r.Read(0, []Req{{}}, 1); err == nil {
		t.Error("read on a closed ring succeeded")
	}
}

// TestWriteMatchesPwrite writes scattered pieces of a buffer, registered
// and not, to scattered file offsets and reads every range back.
func TestWriteMatchesPwrite(t *testing.T) {
	t.Parallel()
	const chunk, chunks = 4096, 200
	for _, tc := range []struct {
		name       string
		depth      int
		registered bool
	}{
		{"depth1", 1, false}, {"depth32-fixed", 32, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f, _ := dataFile(t, chunk*chunks*2)
			wf, err := os.OpenFile(f.Name(), os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer wf.Close()
			r := open(t, 64)
			buf := disktest.Buffer(t, chunk*chunks)
			rng := rand.New(rand.NewPCG(5, uint64(tc.depth)))
			for i := range buf {
				buf[i] = byte(rng.Uint32())
			}
			bufIdx := int32(-1)
			if tc.registered {
				if err := r.Register([][]byte{buf}); err != nil {
					t.Fatal(err)
				}
				bufIdx = 0
			}
			dst := rng.Perm(chunks * 2)[:chunks]
			reqs := make([]Req, chunks)
			for i := range reqs {
				reqs[i] = Req{Off: uint64(dst[i] * chunk), Addr: uintptr(unsafe.Pointer(&buf[i*chunk])), Len: chunk, Buf: bufIdx}
			}
			if err := r.Write(int(wf.Fd()), reqs, tc.depth); err != nil {
				t.Fatal(err)
			}
			got := make([]byte, chunk)
			for i := range reqs {
				if _, err := f.ReadAt(got, int64(dst[i]*chunk)); err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(got, buf[i*chunk:(i+1)*chunk]) {
					t.Fatalf("request %d: the file differs from what the ring wrote", i)
				}
			}
			// A write to a read-only descriptor is named.
			var ue *Error
			err = r.Write(int(f.Fd()), reqs[:1], 1)
			if !errors.As(err, &ue) || ue.Op != "write" || ue.Index != 0 || !errors.Is(err, syscall.EBADF) {
				t.Fatalf("write to a read-only fd: %v, want EBADF on write 0", err)
			}
		})
	}
}

// TestSubmitsInSmallBatches checks that a ring keeps the depth in flight
// by submitting at most SubmitBatch requests per io_uring_enter, both
// when it first fills and when it refills after completions, rather than
// a whole ring's worth at once.
func TestSubmitsInSmallBatches(t *testing.T) {
	t.Parallel()
	const chunk, chunks, depth = 4096, 256, 32
	f, _ := dataFile(t, chunk*chunks)
	r := open(t, depth)
	buf := disktest.Buffer(t, chunk*chunks)
	reqs := make([]Req, chunks)
	for i := range reqs {
		reqs[i] = Req{Off: uint64(i * chunk), Addr: uintptr(unsafe.Pointer(&buf[i*chunk])), Len: chunk, Buf: -1}
	}
	for range 2 {
		if err := r.Read(int(f.Fd()), reqs, depth); err != nil {
			t.Fatal(err)
		}
	}
	s := r.Stats()
	if s.MaxSubmit < 1 || s.MaxSubmit > SubmitBatch {
		t.Errorf("one io_uring_enter submitted up to %d requests, want 1 to %d", s.MaxSubmit, SubmitBatch)
	}
	if min := uint64(2 * chunks / SubmitBatch); s.Enters < min {
		t.Errorf("%d io_uring_enter calls for %d requests, want at least %d", s.Enters, 2*chunks, min)
	}
	r.Close()
	if (r.Stats() != Stats{}) {
		t.Error("a closed ring has counts")
	}
}
