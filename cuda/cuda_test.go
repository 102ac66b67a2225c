package cuda_test

import (
	"errors"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kvtier/kvtier/cuda"
	"github.com/kvtier/kvtier/cuda/cudatest"
	"github.com/kvtier/kvtier/pattern"
)

// load builds a fresh fake driver with the given FAKECUDA_* settings and
// returns what cuda.Open makes of it.
func load(t *testing.T, env map[string]string, opts ...cudatest.Option) (*cuda.Driver, cudatest.Libs, error) {
	t.Helper()
	for k, v := range env {
		t.Setenv(k, v)
	}
	libs := cudatest.Build(t, opts...)
	d, err := cuda.Open(libs.CUDA)
	return d, libs, err
}

// open loads a fresh fake driver with the given FAKECUDA_* settings.
func open(t *testing.T, env map[string]string, opts ...cudatest.Option) (*cuda.Driver, cudatest.Libs) {
	t.Helper()
	d, libs, err := load(t, env, opts...)
	if err != nil {
		t.Fatalf("open fake driver: %v", err)
	}
	return d, libs
}

func context(t *testing.T, d *cuda.Driver) (*cuda.Context, *cuda.Stream) {
	t.Helper()
	c, err := d.PrimaryContext(0)
	if err != nil {
		t.Fatal(err)
	}
	s, err := c.NewStream()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Destroy(); err != nil {
			t.Errorf("destroy stream: %v", err)
		}
		if err := c.Release(); err != nil {
			t.Errorf("release context: %v", err)
		}
	})
	return c, s
}

func TestOpenMissingLibrary(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "nowhere", "libcuda.so.1")
	_, err := cuda.Open(bad)
	if err == nil {
		t.Fatal("opened a library that does not exist")
	}
	if !errors.Is(err, cuda.ErrNoDriver) {
		t.Errorf("error %v is not ErrNoDriver", err)
	}
	for _, want := range []string{"cannot load libcuda", "tried " + bad, "No such file"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	if _, again := cuda.Open(bad); again != err {
		t.Errorf("second Open of %s: %v, want the first error again", bad, again)
	}
}

// TestOpenOncePerPath: a path is loaded once per process; another path is
// another library.
func TestOpenOncePerPath(t *testing.T) {
	d, libs := open(t, nil)
	again, err := cuda.Open(libs.CUDA)
	if err != nil || again != d {
		t.Fatalf("second Open of %s = %p, %v; want the first driver %p", libs.CUDA, again, err, d)
	}
	other, _ := open(t, nil)
	if other == d {
		t.Fatal("two library files share one driver")
	}
}

func TestOpenDefaultNameListsTried(t *testing.T) {
	d, err := cuda.Open("")
	if err == nil {
		t.Skipf("a CUDA driver is installed here (%s)", d.Path)
	}
	if !errors.Is(err, cuda.ErrNoDriver) || !strings.Contains(err.Error(), "tried libcuda.so.1") {
		t.Errorf("error %q does not list the paths tried", err)
	}
}

func TestLoaderVersions(t *testing.T) {
	tests := []struct {
		name    string
		env     map[string]string
		opts    []cudatest.Option
		wantErr string // substring of the load error; "" loads
		has     map[string]bool
	}{
		{name: "12.8 has batch", env: map[string]string{"FAKECUDA_VERSION": "12080"},
			has: map[string]bool{"cuMemcpyBatchAsync": true, "cuStreamWaitValue32": true, "cuMemGetHandleForAddressRange": true}},
		{name: "11.8 has no batch", env: map[string]string{"FAKECUDA_VERSION": "11080"}, opts: []cudatest.Option{cudatest.V1Only},
			has: map[string]bool{"cuMemcpyBatchAsync": false, "cuStreamWaitValue32": true, "cuMemAlloc": true}},
		{name: "11.2 lacks optional memops and dmabuf", env: map[string]string{"FAKECUDA_VERSION": "11020"}, opts: []cudatest.Option{cudatest.V1Only},
			has: map[string]bool{"cuMemcpyBatchAsync": false, "cuStreamWaitValue32": false, "cuMemGetHandleForAddressRange": false}},
		{name: "10.2 lacks a required symbol", env: map[string]string{"FAKECUDA_VERSION": "10020"},
			wantErr: "required cuDevicePrimaryCtxRelease (ABI 11000) not found (driver 10020)"},
		{name: "hidden required", env: map[string]string{"FAKECUDA_HIDE": "cuMemAlloc"},
			wantErr: "required cuMemAlloc (ABI 3020) not found"},
		{name: "hidden optional", env: map[string]string{"FAKECUDA_HIDE": "cuMemcpyBatchAsync,cuStreamWaitValue32"},
			has: map[string]bool{"cuMemcpyBatchAsync": false, "cuStreamWaitValue32": false, "cuMemFree": true}},
		{name: "cuInit fails", env: map[string]string{"FAKECUDA_INIT_FAIL": "1"},
			wantErr: "cuInit: CUDA_ERROR_NO_DEVICE (100)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, _, err := load(t, tt.env, tt.opts...)
			if tt.wantErr != "" {
				if err == nil {
					t.Fatalf("loaded %s; want error %q", d.Path, tt.wantErr)
				}
				if !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %q, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for sym, want := range tt.has {
				if got := d.Has(sym); got != want {
					t.Errorf("Has(%s) = %v, want %v", sym, got, want)
				}
			}
		})
	}
}

func TestDevice(t *testing.T) {
	d, _ := open(t, map[string]string{"FAKECUDA_DEVICES": "2"})
	if d.VersionString() != "12.8" {
		t.Errorf("version %q", d.VersionString())
	}
	n, err := d.DeviceCount()
	if err != nil || n != 2 {
		t.Fatalf("DeviceCount = %d, %v", n, err)
	}
	info, err := d.Device(1)
	if err != nil {
		t.Fatal(err)
	}
	if info.Name != "Fake CUDA Device 1" || info.BusID != "0000:1a:00.0" || info.MemoryBytes != 80<<30 {
		t.Errorf("device = %+v", info)
	}
	if info.Attrs[cuda.AttrPCIBusID] != 0x1a || info.Attrs[cuda.AttrAsyncEngineCount] != 2 || info.Attrs[cuda.AttrDMABufSupported] != 1 {
		t.Errorf("attributes = %v", info.Attrs)
	}
	if !d.CanHoldStreams(info) {
		t.Error("CanHoldStreams false on a device with stream memory operations")
	}
	_, err = d.Device(5)
	var ce *cuda.Error
	if !errors.As(err, &ce) || ce.Op != "cuDeviceGet" || ce.Name != "CUDA_ERROR_INVALID_DEVICE" {
		t.Errorf("Device(5) error = %v", err)
	}
}

const chunk = 4096

// scatter builds a plan moving chunks src slot perm[i] → dst slot i and
// returns the source offsets it reads, in dst order.
func scatter(p *cuda.Plan, dst, src uint64, perm []int) {
	p.Reset(len(perm))
	for i, s := range perm {
		p.Add(dst+uint64(i*chunk), src+uint64(s*chunk), chunk)
	}
}

// buffers of n chunks on each side of dir; the source holds the pattern.
type side struct {
	addr uint64
	read func(p []byte) error
}

func sides(t *testing.T, c *cuda.Context, dir cuda.Dir, n int) (dst, src side) {
	t.Helper()
	size := int64(n * chunk)
	host := func(fill bool) side {
		h, err := c.AllocHost(size, cuda.HostPortable)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { h.Free() })
		if fill {
			pattern.Fill(h.Bytes(), 7, 0)
		}
		return side{addr: uint64(h.Addr()), read: func(p []byte) error { copy(p, h.Bytes()); return nil }}
	}
	dev := func(fill bool) side {
		m, err := c.AllocDevice(size)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { m.Free() })
		if fill {
			b := make([]byte, size)
			pattern.Fill(b, 7, 0)
			if _, err := m.WriteAt(b, 0); err != nil {
				t.Fatal(err)
			}
		}
		return side{addr: m.Ptr(), read: func(p []byte) error { _, err := m.ReadAt(p, 0); return err }}
	}
	switch dir {
	case cuda.HostToDevice:
		return dev(false), host(true)
	case cuda.DeviceToHost:
		return host(false), dev(true)
	}
	return dev(false), dev(true)
}

// verify checks that dst chunk i holds source chunk perm[i].
func verify(t *testing.T, dst side, perm []int) error {
	t.Helper()
	b := make([]byte, len(perm)*chunk)
	if err := dst.read(b); err != nil {
		t.Fatal(err)
	}
	for i, s := range perm {
		if err := pattern.Check(b[i*chunk:(i+1)*chunk], 7, int64(s*chunk)); err != nil {
			return err
		}
	}
	return nil
}

var perm = []int{5, 2, 7, 0, 3, 6, 1, 4}

// hostToDevice opens a fake driver with env and opts and returns its
// stream, a device destination of len(perm) chunks and a plan that
// scatters a pattern-filled host source into it in the given order; the
// plan is freed when the test ends.
func hostToDevice(t *testing.T, env map[string]string, order []int, opts ...cudatest.Option) (*cuda.Stream, side, *cuda.Plan) {
	t.Helper()
	d, _ := open(t, env, opts...)
	c, s := context(t, d)
	dst, src := sides(t, c, cuda.HostToDevice, len(perm))
	p := new(cuda.Plan)
	t.Cleanup(p.Free)
	scatter(p, dst.addr, src.addr, order)
	return s, dst, p
}

func TestCopyPlans(t *testing.T) {
	d, _ := open(t, nil)
	c, s := context(t, d)
	for _, dir := range []cuda.Dir{cuda.HostToDevice, cuda.DeviceToHost, cuda.DeviceToDevice} {
		for _, how := range []cuda.How{cuda.PerCopy, cuda.Batch} {
			t.Run(dir.String()+map[cuda.How]string{cuda.PerCopy: "/percopy", cuda.Batch: "/batch"}[how], func(t *testing.T) {
				dst, src := sides(t, c, dir, len(perm))
				var p cuda.Plan
				defer p.Free()
				scatter(&p, dst.addr, src.addr, perm)
				n, err := s.Copy(dir, how, &p)
				if err != nil || n != len(perm) {
					t.Fatalf("Copy = %d, %v", n, err)
				}
				if err := s.Sync(); err != nil {
					t.Fatal(err)
				}
				if err := verify(t, dst, perm); err != nil {
					t.Fatal(err)
				}
			})
		}
	}
}

func TestPlanGrows(t *testing.T) {
	var p cuda.Plan
	defer p.Free()
	p.Reset(2)
	for i := range 100 {
		p.Add(uint64(i), uint64(2*i), int64(3*i))
	}
	if p.Len() != 100 {
		t.Fatalf("Len = %d", p.Len())
	}
	d, _ := open(t, nil)
	c, s := context(t, d)
	dst, src := sides(t, c, cuda.DeviceToDevice, 100)
	p.Reset(0)
	for i := range 100 {
		p.Add(dst.addr+uint64(i*chunk), src.addr+uint64((99-i)*chunk), chunk)
	}
	if n, err := s.Copy(cuda.DeviceToDevice, cuda.Batch, &p); err != nil || n != 100 {
		t.Fatalf("Copy = %d, %v", n, err)
	}
	s.Sync()
	rev := make([]int, 100)
	for i := range rev {
		rev[i] = 99 - i
	}
	if err := verify(t, dst, rev); err != nil {
		t.Fatal(err)
	}
}

func TestWrongPlanFailsVerification(t *testing.T) {
	wrong := append([]int(nil), perm...)
	wrong[2], wrong[3] = wrong[3], wrong[2] // the plan swaps two chunks
	s, dst, p := hostToDevice(t, nil, wrong)
	if _, err := s.Copy(cuda.HostToDevice, cuda.PerCopy, p); err != nil {
		t.Fatal(err)
	}
	s.Sync()
	var m *pattern.Mismatch
	if err := verify(t, dst, perm); !errors.As(err, &m) || m.Offset/chunk != int64(perm[2]) {
		t.Fatalf("verify of a wrong plan = %v, want a mismatch in chunk %d", err, perm[2])
	}
}

func TestCorruptedCopyFailsVerification(t *testing.T) {
	s, dst, p := hostToDevice(t, map[string]string{"FAKECUDA_CORRUPT_COPY_AT": "4"}, perm)
	if _, err := s.Copy(cuda.HostToDevice, cuda.Batch, p); err != nil {
		t.Fatal(err)
	}
	s.Sync()
	var m *pattern.Mismatch
	if err := verify(t, dst, perm); !errors.As(err, &m) || m.BadBytes != 1 {
		t.Fatalf("verify = %v, want one bad byte", err)
	}
}

func TestCopyFailures(t *testing.T) {
	tests := []struct {
		name   string
		env    map[string]string
		opts   []cudatest.Option
		how    cuda.How
		issued int
		op     string
		unsup  bool
	}{
		{"percopy fails at 3", map[string]string{"FAKECUDA_FAIL_COPY_AT": "3"}, nil, cuda.PerCopy, 3, "cuMemcpyHtoDAsync", false},
		{"batch fails at 5", map[string]string{"FAKECUDA_FAIL_COPY_AT": "5"}, nil, cuda.Batch, 5, "cuMemcpyBatchAsync", false},
		{"batch unsupported on 11.8", map[string]string{"FAKECUDA_VERSION": "11080"}, []cudatest.Option{cudatest.V1Only}, cuda.Batch, 0, "cuMemcpyBatchAsync", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, _, p := hostToDevice(t, tt.env, perm, tt.opts...)
			n, err := s.Copy(cuda.HostToDevice, tt.how, p)
			var ce *cuda.Error
			if !errors.As(err, &ce) || ce.Op != tt.op || n != tt.issued {
				t.Fatalf("Copy = %d, %v; want %d issued and %s failing", n, err, tt.issued, tt.op)
			}
			if errors.Is(err, cuda.ErrUnsupported) != tt.unsup {
				t.Errorf("errors.Is(%v, ErrUnsupported) = %v", err, !tt.unsup)
			}
			if err := s.Sync(); err != nil {
				t.Errorf("stream after a failed plan: %v", err)
			}
		})
	}
}

func TestAllocFailure(t *testing.T) {
	d, _ := open(t, map[string]string{"FAKECUDA_FAIL_ALLOC_AFTER": "1"})
	c, _ := context(t, d)
	m, err := c.AllocDevice(1 << 20)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Free()
	_, err = c.AllocDevice(1 << 20)
	var ce *cuda.Error
	if !errors.As(err, &ce) || ce.Op != "cuMemAlloc" || ce.Name != "CUDA_ERROR_OUT_OF_MEMORY" {
		t.Fatalf("second alloc: %v", err)
	}
	if !strings.Contains(err.Error(), "alloc 1048576 device bytes") {
		t.Errorf("error %q lacks context", err)
	}
}

func TestTimerHoldsStream(t *testing.T) {
	d, _ := open(t, nil)
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
	for rep := range 2 {
		if err := tm.Start(); err != nil {
			t.Fatal(err)
		}
		tm.Queue(p.Len())
		if _, err := s.Copy(cuda.HostToDevice, cuda.PerCopy, &p); err != nil {
			t.Fatal(err)
		}
		if rep == 0 {
			// Held: nothing has run yet.
			if err := verify(t, dst, perm); err == nil {
				t.Fatal("copies ran while the stream was held")
			}
		}
		sec, err := tm.Stop()
		if err != nil {
			t.Fatal(err)
		}
		if sec <= 0 || sec > 5 {
			t.Errorf("elapsed %g s", sec)
		}
		if !tm.Held() {
			t.Error("Held false for a small plan")
		}
		if err := verify(t, dst, perm); err != nil {
			t.Fatal(err)
		}
	}
}

func TestTimerLetsGoOfLongPlans(t *testing.T) {
	// The fake blocks a call that queues more than 16 ops behind a hold,
	// as a real driver would (for ever).
	d, _ := open(t, map[string]string{"FAKECUDA_QUEUE_LIMIT": "16"})
	c, s := context(t, d)
	info, _ := d.Device(0)
	tm, err := cuda.NewTimer(s, info, true)
	if err != nil {
		t.Fatal(err)
	}
	defer tm.Close()
	big := make([]int, 40)
	for i := range big {
		big[i] = (i * 7) % 40
	}
	dst, src := sides(t, c, cuda.DeviceToDevice, len(big))
	var p cuda.Plan
	defer p.Free()
	scatter(&p, dst.addr, src.addr, big)

	// Too many ops behind the hold: the fake blocks the call as a driver
	// would, and the guard lets the stream go.
	tm.MaxOps = 1000
	tm.GuardDelay = 50 * time.Millisecond
	tm.Start()
	tm.Queue(p.Len())
	if err := tm.Guard(func() error { _, err := s.Copy(cuda.DeviceToDevice, cuda.PerCopy, &p); return err }); err != nil {
		t.Fatalf("guarded copy: %v", err)
	}
	if tm.Holding() {
		t.Error("still holding after the guard fired")
	}
	if sec, err := tm.Stop(); err != nil || sec <= 0 {
		t.Fatalf("Stop = %g, %v", sec, err)
	}
	if tm.Held() {
		t.Error("Held true after the guard fired")
	}
	if err := verify(t, dst, big); err != nil {
		t.Fatal(err)
	}

	tm.MaxOps = 8
	tm.Start()
	tm.Queue(p.Len())
	if tm.Holding() {
		t.Fatal("still holding past MaxOps")
	}
	if _, err := s.Copy(cuda.DeviceToDevice, cuda.PerCopy, &p); err != nil {
		t.Fatal(err)
	}
	if sec, err := tm.Stop(); err != nil || sec <= 0 {
		t.Fatalf("Stop = %g, %v", sec, err)
	}
	if tm.Held() {
		t.Error("Held true after letting go")
	}
	if err := verify(t, dst, big); err != nil {
		t.Fatal(err)
	}
}

func TestTimerWithoutMemOps(t *testing.T) {
	d, _ := open(t, map[string]string{"FAKECUDA_VERSION": "11080", "FAKECUDA_NO_MEMOPS": "1"}, cudatest.V1Only)
	_, s := context(t, d)
	info, _ := d.Device(0)
	if d.CanHoldStreams(info) {
		t.Fatal("CanHoldStreams on an 11.8 device without stream memory operations")
	}
	tm, err := cuda.NewTimer(s, info, true)
	if err != nil {
		t.Fatal(err)
	}
	defer tm.Close()
	tm.Start()
	if sec, err := tm.Stop(); err != nil || sec <= 0 {
		t.Fatalf("Stop = %g, %v", sec, err)
	}
	if tm.Held() {
		t.Error("Held without the means to hold")
	}
}

func TestDMABuf(t *testing.T) {
	d, _ := open(t, nil)
	c, _ := context(t, d)
	m, err := c.AllocDevice(1 << 16)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Free()
	fd, err := c.DMABuf(m.Ptr(), 1<<16)
	if err != nil {
		t.Fatal(err)
	}
	syscall.Close(fd)
	if _, err := c.DMABuf(m.Ptr()+8, 100); err == nil {
		t.Error("unaligned export accepted")
	}
	// A small allocation comes from the driver's sub-allocator: it does
	// not start on a page, and its range is what was asked for.
	small, err := c.AllocDevice(3000)
	if err != nil {
		t.Fatal(err)
	}
	defer small.Free()
	base, size, err := c.AddressRange(small.Ptr() + 100)
	if err != nil || base != small.Ptr() || size != 3000 {
		t.Errorf("AddressRange inside a 3000-byte allocation = %#x, %d, %v; want %#x, 3000", base, size, err, small.Ptr())
	}
	if small.Ptr()%uint64(os.Getpagesize()) == 0 {
		t.Errorf("small allocation %#x is page aligned: the fake no longer models sub-allocation", small.Ptr())
	}
	if _, err := c.DMABuf(small.Ptr()&^uint64(os.Getpagesize()-1), int64(os.Getpagesize())); err == nil {
		t.Error("export of a page reaching outside the allocation accepted")
	}

	d2, _ := open(t, map[string]string{"FAKECUDA_HIDE": "cuMemGetHandleForAddressRange"})
	c2, _ := context(t, d2)
	m2, err := c2.AllocDevice(1 << 16)
	if err != nil {
		t.Fatal(err)
	}
	defer m2.Free()
	if _, err := c2.DMABuf(m2.Ptr(), 1<<16); !errors.Is(err, cuda.ErrUnsupported) {
		t.Errorf("export without the symbol: %v", err)
	}
}

func bf16(f float32) uint16 { return uint16(mathFloat32bits(f) >> 16) }

func TestGemm(t *testing.T) {
	d, libs := open(t, nil)
	c, s := context(t, d)
	b, err := cuda.OpenBLAS(libs.CUBLAS, d.Version, nil)
	if err != nil {
		t.Fatal(err)
	}
	h, err := b.NewHandle(s)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Destroy()
	if h.Version != 120900 {
		t.Errorf("cublas version %d", h.Version)
	}
	// Two batches of A[2×3]·B[3×2], row-major, small integers (exact in bf16).
	const M, N, K, batch = 2, 2, 3, 2
	a := []float32{1, 2, 3, 4, 5, 6, 2, 0, 1, 0, 1, 0}
	bm := []float32{1, 0, 0, 1, 1, 1, 1, 2, 3, 4, 5, 6}
	want := []float32{4, 5, 10, 11, 7, 10, 3, 4}
	mem := func(vals []float32) *cuda.DeviceMem {
		m, err := c.AllocDevice(int64(2 * max(len(vals), 1)))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { m.Free() })
		buf := make([]byte, 2*len(vals))
		for i, v := range vals {
			x := bf16(v)
			buf[2*i], buf[2*i+1] = byte(x), byte(x>>8)
		}
		if _, err := m.WriteAt(buf, 0); err != nil {
			t.Fatal(err)
		}
		return m
	}
	A, B, C := mem(a), mem(bm), mem(make([]float32, M*N*batch))
	if n, err := h.Gemms([]cuda.Gemm{{M: M, N: N, K: K, Batch: batch, A: A.Ptr(), B: B.Ptr(), C: C.Ptr()}}); err != nil || n != 1 {
		t.Fatalf("Gemms = %d, %v", n, err)
	}
	s.Sync()
	out := make([]byte, 2*M*N*batch)
	C.ReadAt(out, 0)
	for i, w := range want {
		got := mathFloat32frombits(uint32(out[2*i])<<16 | uint32(out[2*i+1])<<24)
		if got != w {
			t.Errorf("C[%d] = %g, want %g", i, got, w)
		}
	}
	// Unbatched: the first product only.
	if _, err := h.Gemms([]cuda.Gemm{{M: M, N: N, K: K, A: A.Ptr(), B: B.Ptr(), C: C.Ptr()}}); err != nil {
		t.Fatal(err)
	}
	t.Setenv("FAKECUBLAS_FAIL_GEMM_AT", "3")
	n, err := h.Gemms(make([]cuda.Gemm, 3+1))
	if err == nil {
		t.Fatalf("zero-size gemms accepted (%d)", n)
	}
	ops := []cuda.Gemm{{M: 1, N: 1, K: 1, A: A.Ptr(), B: B.Ptr(), C: C.Ptr()}, {M: 1, N: 1, K: 1, A: A.Ptr(), B: B.Ptr(), C: C.Ptr()}}
	n, err = h.Gemms(ops)
	var ce *cuda.Error
	if !errors.As(err, &ce) || ce.Name != "CUBLAS_STATUS_EXECUTION_FAILED" || n != 1 {
		t.Fatalf("injected failure: %d, %v", n, err)
	}
}

func TestOpenBLASMissing(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "libcublas.so.12")
	_, err := cuda.OpenBLAS(bad, 12080, nil)
	if !errors.Is(err, cuda.ErrNoDriver) || !strings.Contains(err.Error(), "cannot load libcublas (tried "+bad+": ") {
		t.Fatalf("err = %v", err)
	}
}

func TestMain(m *testing.M) {
	os.Exit(m.Run())
}

// TestDeviceMemReadWriteAt checks device memory's io.ReaderAt and
// io.WriterAt against the host buffers' rule (package bounds): a read cut
// short at the end says io.EOF, a write that does not fit writes nothing,
// and freed memory is refused before its address reaches the driver.
func TestDeviceMemReadWriteAt(t *testing.T) {
	d, _ := open(t, nil)
	c, _ := context(t, d)
	m, err := c.AllocDevice(16)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.WriteAt([]byte("0123456789abcdef"), 0); err != nil {
		t.Fatal(err)
	}
	if n, err := m.WriteAt([]byte("XYZ"), 14); err == nil || n != 0 {
		t.Errorf("WriteAt past the end = %d, %v; want 0 and an error", n, err)
	}
	if _, err := m.WriteAt(nil, math.MaxInt64); err == nil {
		t.Error("WriteAt at MaxInt64 succeeded")
	}
	p := make([]byte, 8)
	if n, err := m.ReadAt(p, 12); n != 4 || err != io.EOF || string(p[:n]) != "cdef" {
		t.Errorf("ReadAt past the end = %d %q, %v; want 4 \"cdef\", EOF", n, p[:n], err)
	}
	if n, err := m.ReadAt(p, 17); n != 0 || err == nil || err == io.EOF {
		t.Errorf("ReadAt outside = %d, %v; want an error", n, err)
	}
	if err := m.Free(); err != nil {
		t.Fatal(err)
	}
	if _, err := m.ReadAt(p, 0); err == nil || !strings.Contains(err.Error(), "freed") {
		t.Errorf("ReadAt after Free = %v, want freed", err)
	}
	if _, err := m.WriteAt(p, 0); err == nil || !strings.Contains(err.Error(), "freed") {
		t.Errorf("WriteAt after Free = %v, want freed", err)
	}
}
