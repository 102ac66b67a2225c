package tiers

import (
	"cmp"
	"errors"
	"fmt"
	"os"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/kvtier/kvtier/cuda"
	"github.com/kvtier/kvtier/kv"
	"github.com/kvtier/kvtier/system"
)

func init() {
	RegisterBackend(BackendSpec{Name: "cuda", Priority: 10, Open: OpenCUDA})
}

// CUDABackend runs tiers on an NVIDIA GPU through package cuda: device
// memory from cuMemAlloc, pinned host memory from cuMemHostAlloc (or mmap,
// mbind to the NUMA node and cuMemHostRegister when a node is given),
// pageable memory from mmap; copies issued on one non-blocking stream in
// one cgo call per plan; GEMMs in bf16 through cuBLAS; samples timed with
// CUDA events on a stream held until the sample's work is queued.
//
// Its Timer values implement interface{ Held() bool }: whether the last
// sample's stream was held until all its work was queued (false where
// the device cannot hold a stream, for pageable copies, which the driver
// may stage synchronously, for samples of more than
// cuda.DefaultMaxHeldOps operations, and when a call blocked behind the
// hold for cuda.DefaultGuardDelay and the watchdog let the stream go).
type CUDABackend struct {
	cfg    BackendConfig
	drv    *cuda.Driver
	ctx    *cuda.Context
	stream *cuda.Stream
	info   cuda.DeviceInfo
	link   system.Link

	queued, blocking *cuda.Timer

	mu      sync.Mutex
	plan    cuda.Plan
	active  *cuda.Timer // started and not yet stopped
	blas    *cuda.BLAS
	handle  *cuda.Handle
	blasErr error
	scratch *cuda.DeviceMem
	// batchBlocks is set once a batch copy blocked behind a hold: the
	// driver then takes a batch as many queue entries, and later batches
	// count one operation per copy against the hold.
	batchBlocks bool
	// warm holds the GEMM shapes and copy kinds already issued once
	// unheld; see warmUp.
	warm map[any]bool
}

// OpenCUDA opens device cfg.GPU through cfg.LibCUDA (libcuda.so.1 when
// empty). Without a driver the error names the library that could not be
// loaded.
func OpenCUDA(cfg BackendConfig) (Backend, error) {
	drv, err := cuda.Open(cfg.LibCUDA)
	if err != nil {
		return nil, err
	}
	b := &CUDABackend{cfg: cfg, drv: drv, warm: map[any]bool{}}
	if err := b.open(); err != nil {
		b.Close()
		return nil, err
	}
	return b, nil
}

func (b *CUDABackend) open() error {
	n, err := b.drv.DeviceCount()
	if err != nil {
		return err
	}
	if b.cfg.GPU < 0 || b.cfg.GPU >= n {
		return fmt.Errorf("cuda: GPU %d asked for, but the driver sees %d device(s)", b.cfg.GPU, n)
	}
	if b.info, err = b.drv.Device(b.cfg.GPU); err != nil {
		return err
	}
	if b.ctx, err = b.drv.PrimaryContext(b.cfg.GPU); err != nil {
		return err
	}
	if b.stream, err = b.ctx.NewStream(); err != nil {
		return err
	}
	if b.queued, err = cuda.NewTimer(b.stream, b.info, true); err != nil {
		return err
	}
	if b.blocking, err = cuda.NewTimer(b.stream, b.info, false); err != nil {
		return err
	}
	root := cmp.Or(b.cfg.Root, "/")
	b.link = system.DeviceLink(root, b.info.BusID)
	if b.cfg.NUMA == NUMAAuto {
		b.cfg.NUMA = system.NUMANode(root, b.info.BusID) // -1 where unknown
	}
	if b.cfg.Log != nil && !b.drv.CanHoldStreams(b.info) {
		fmt.Fprintf(b.cfg.Log, "kvtier: warning: cuda: %s cannot hold a stream (no stream memory operations): launch cost is inside timings (held=false)\n", b.Device())
	}
	return nil
}

// Name returns "cuda".
func (b *CUDABackend) Name() string { return "cuda" }

// Device names the GPU and its PCI address, e.g. "NVIDIA H200 [0000:19:00.0]".
func (b *CUDABackend) Device() string { return fmt.Sprintf("%s [%s]", b.info.Name, b.info.BusID) }

// DeviceCount is how many devices the driver sees.
func (b *CUDABackend) DeviceCount() (int, error) { return b.drv.DeviceCount() }

// GPU returns the device's ordinal.
func (b *CUDABackend) GPU() int { return b.cfg.GPU }

// Info returns the device as the driver describes it.
func (b *CUDABackend) Info() cuda.DeviceInfo { return b.info }

// DriverVersion is the driver's CUDA version, e.g. "12.8".
func (b *CUDABackend) DriverVersion() string { return b.drv.VersionString() }

// Caps says that device memory is the GPU's own.
func (b *CUDABackend) Caps() Caps { return Caps{DeviceMemory: true} }

// ComputeDType returns "bf16": GEMMs run in bf16 with fp32 accumulation.
func (b *CUDABackend) ComputeDType() string { return "bf16" }

// CopyModes lists percopy and contiguous, and batch where the driver has
// cuMemcpyBatchAsync (CUDA 12.8+).
func (b *CUDABackend) CopyModes() []CopyMode {
	if b.drv.Has("cuMemcpyBatchAsync") {
		return []CopyMode{PerCopy, Batch, Contiguous}
	}
	return []CopyMode{PerCopy, Contiguous}
}

// LinkGBps is the PCIe payload limit between host memory and the
// device at the link's max generation and width (an idle GPU trains its
// link down, so the current ones would understate it), 0 for other
// pairs and where the link is unknown.
func (b *CUDABackend) LinkGBps(src, dst MemKind) float64 {
	if (src == Device) != (dst == Device) {
		return b.link.LimitGBps()
	}
	return 0
}

// A cudaBuffer is device memory, pinned host memory or pageable host
// memory of the cuda backend.
type cudaBuffer struct {
	b    *CUDABackend
	kind MemKind
	size int64
	dev  *cuda.DeviceMem // Device
	pin  *cuda.HostMem   // Pinned (allocated or registered)
	mmap []byte          // Pageable, or Pinned registered on a NUMA node
	// placed is where mmap's pages went (Placed).
	placed string
}

// Placement says where the buffer's host pages went.
func (x *cudaBuffer) Placement() string { return x.placed }

func (x *cudaBuffer) Kind() MemKind { return x.kind }
func (x *cudaBuffer) Size() int64   { return x.size }

func (x *cudaBuffer) Addr() uintptr {
	switch {
	case x.dev != nil:
		return uintptr(x.dev.Ptr())
	case x.mmap != nil:
		return uintptr(unsafe.Pointer(&x.mmap[0]))
	case x.pin != nil:
		return x.pin.Addr()
	}
	return 0
}

func (x *cudaBuffer) Host() []byte {
	switch {
	case x.mmap != nil:
		return x.mmap
	case x.pin != nil:
		return x.pin.Bytes()
	}
	return nil
}

func (x *cudaBuffer) ReadAt(p []byte, off int64) (int, error) {
	if x.dev != nil {
		return x.dev.ReadAt(p, off)
	}
	return hostReadAt("cuda backend: buffer", x.Host(), p, off)
}

func (x *cudaBuffer) WriteAt(p []byte, off int64) (int, error) {
	if x.dev != nil {
		return x.dev.WriteAt(p, off)
	}
	return hostWriteAt("cuda backend: buffer", x.Host(), p, off)
}

func (x *cudaBuffer) Close() error {
	// cuMemFree synchronises the device: behind a held stream that would
	// never return.
	x.b.mu.Lock()
	if x.b.active != nil {
		x.b.active.Unhold()
	}
	x.b.mu.Unlock()
	var errs []error
	release(&errs, &x.dev, (*cuda.DeviceMem).Free)
	release(&errs, &x.pin, (*cuda.HostMem).Free)
	if x.mmap != nil {
		errs = append(errs, unix.Munmap(x.mmap))
		x.mmap = nil
	}
	return errors.Join(errs...)
}

// Alloc returns device memory (cuMemAlloc, not initialised), pinned host
// memory (cuMemHostAlloc; on cfg.NUMA >= 0 an mmap bound there with mbind
// and registered with cuMemHostRegister) or pageable host memory (mmap,
// bound to cfg.NUMA when given). Host pages are faulted in.
func (b *CUDABackend) Alloc(kind MemKind, size int64) (Buffer, error) {
	if size <= 0 || size > int64(^uint(0)>>1) {
		return nil, fmt.Errorf("cuda backend: alloc of %d bytes", size)
	}
	x := &cudaBuffer{b: b, kind: kind, size: size}
	var err error
	switch kind {
	case Device:
		x.dev, err = b.ctx.AllocDevice(size)
	case Pinned:
		if b.cfg.NUMA < 0 {
			x.pin, err = b.ctx.AllocHost(size, cuda.HostPortable)
			break
		}
		if x.mmap, x.placed, err = b.hostMap(size); err == nil {
			if x.pin, err = b.ctx.RegisterHost(x.mmap); err != nil {
				unix.Munmap(x.mmap)
				x.mmap = nil
			}
		}
	case Pageable:
		x.mmap, x.placed, err = b.hostMap(size)
	default:
		return nil, fmt.Errorf("cuda backend: unknown memory kind %q", kind)
	}
	if err != nil {
		return nil, fmt.Errorf("cuda backend: %s: %w", kind, err)
	}
	if kind == Pinned && x.mmap == nil {
		// cuMemHostAlloc'd pages are resident; touch them anyway so the
		// first sample does not pay for them.
		h := x.pin.Bytes()
		for i := 0; i < len(h); i += os.Getpagesize() {
			h[i] = 0
		}
	}
	return x, nil
}

// hostMap maps size bytes, places them on cfg.NUMA when given
// (placeOnNode: bound, or preferred where they do not fit) and faults
// them in; placed says where they went.
func (b *CUDABackend) hostMap(size int64) (mem []byte, placed string, err error) {
	mem, err = unix.Mmap(-1, 0, int(size), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		return nil, "", fmt.Errorf("mmap %d bytes: %w", size, err)
	}
	if b.cfg.NUMA >= 0 {
		p, w, err := placeOnNode(cmp.Or(b.cfg.Root, "/"), mem, b.cfg.NUMA)
		if err != nil {
			unix.Munmap(mem)
			return nil, "", fmt.Errorf("bind to NUMA node %d: %w", b.cfg.NUMA, err)
		}
		if w != "" && b.cfg.Log != nil {
			fmt.Fprintf(b.cfg.Log, "kvtier: warning: cuda: %s\n", w)
		}
		placed = p
	}
	if err := unix.Madvise(mem, unix.MADV_POPULATE_WRITE); err != nil {
		for i := 0; i < len(mem); i += os.Getpagesize() {
			mem[i] = 0
		}
	}
	return mem, placed, nil
}

func (b *CUDABackend) buffer(x Buffer, role string) (*cudaBuffer, error) {
	c, ok := x.(*cudaBuffer)
	if !ok || c == nil {
		return nil, fmt.Errorf("cuda backend: %s buffer %T is not from this backend", role, x)
	}
	if c.dev == nil && c.pin == nil && c.mmap == nil {
		return nil, fmt.Errorf("cuda backend: %s buffer is closed", role)
	}
	return c, nil
}

// Copy enqueues plan from src to dst on the backend's stream in one cgo
// call: one cuMemcpy*Async per chunk (percopy), one cuMemcpyBatchAsync
// (batch) or one copy of ContiguousSpan (contiguous). Host-to-host plans
// are refused: the cuda backend always has a device side.
func (b *CUDABackend) Copy(dst, src Buffer, plan []kv.Copy, mode CopyMode) error {
	d, err := b.buffer(dst, "destination")
	if err != nil {
		return err
	}
	s, err := b.buffer(src, "source")
	if err != nil {
		return err
	}
	dir, err := copyDir(s.kind, d.kind)
	if err != nil {
		return err
	}
	how, plan, err := b.modePlan(mode, plan, s.size, d.size)
	if err != nil || len(plan) == 0 {
		return err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.warmUp(copyKind{dir, how, s.kind, d.kind})
	var ops int // operations this plan queues, as counted against a hold
	if t := b.active; t != nil {
		if s.kind == Pageable || d.kind == Pageable {
			// The driver may stage pageable memory synchronously with the
			// stream: behind a hold only the host can release, that hangs.
			t.Unhold()
		}
		ops = len(plan)
		if how == cuda.Batch && !b.batchBlocks {
			ops = 1
		}
		t.Queue(ops)
	}
	dbase, sbase := uint64(d.Addr()), uint64(s.Addr())
	b.plan.Reset(len(plan))
	for _, c := range plan {
		b.plan.Add(dbase+uint64(c.Dst), sbase+uint64(c.Src), c.Bytes)
	}
	return b.issue(func() error { _, err := b.stream.Copy(dir, how, &b.plan); return err }, how == cuda.Batch, ops, len(plan))
}

// copyDir is the direction of a copy between memory kinds: one side
// must be the device.
func copyDir(src, dst MemKind) (cuda.Dir, error) {
	switch {
	case src != Device && dst == Device:
		return cuda.HostToDevice, nil
	case src == Device && dst != Device:
		return cuda.DeviceToHost, nil
	case src == Device && dst == Device:
		return cuda.DeviceToDevice, nil
	}
	return 0, fmt.Errorf("cuda backend: copy from %s to %s memory has no device side", src, dst)
}

// modePlan checks plan against buffers of srcSize and dstSize bytes and
// returns how mode issues it: the plan itself, or one span (contiguous).
func (b *CUDABackend) modePlan(mode CopyMode, plan []kv.Copy, srcSize, dstSize int64) (cuda.How, []kv.Copy, error) {
	switch mode {
	case PerCopy, Batch:
		how := cuda.PerCopy
		if mode == Batch {
			if !b.drv.Has("cuMemcpyBatchAsync") {
				return 0, nil, fmt.Errorf("cuda backend: %s: %w", UnsupportedModeReason(mode), cuda.ErrUnsupported)
			}
			how = cuda.Batch
		}
		if err := kv.CheckPlan(plan, srcSize, dstSize); err != nil {
			return 0, nil, fmt.Errorf("cuda backend: %w", err)
		}
		return how, plan, nil
	case Contiguous:
		c, err := kv.ContiguousSpan(plan, srcSize, dstSize)
		if err != nil {
			return 0, nil, fmt.Errorf("cuda backend: %w", err)
		}
		return cuda.PerCopy, []kv.Copy{c}, nil
	}
	return 0, nil, fmt.Errorf("cuda backend: %s", UnsupportedModeReason(mode))
}

// issue runs one queuing call, behind the active timer's guard when a
// sample is being held (learning from a call that blocked behind the
// hold), and lets go of the hold when the call fails. b.mu is held.
func (b *CUDABackend) issue(call func() error, batch bool, ops, copies int) error {
	t := b.active
	if t == nil {
		if err := call(); err != nil {
			return fmt.Errorf("cuda backend: %w", err)
		}
		return nil
	}
	err := t.Guard(call)
	if t.GuardFired() {
		b.learn(batch, ops, copies)
	}
	if err != nil {
		t.Unhold()
		return fmt.Errorf("cuda backend: %w", err)
	}
	return nil
}

// A copyKind is what decides which copy path (and maybe kernel) the
// driver uses.
type copyKind struct {
	dir      cuda.Dir
	how      cuda.How
	src, dst MemKind
}

// warmUp lets go of a held stream before work of a kind this backend has
// not issued before: a copyKind, or a cuda.Gemm (its shape). CUDA 12.2 and later load kernels lazily, at their first
// launch, and loading may need a synchronisation that cannot happen while
// the stream waits on the host flag: the first GEMM of a shape (or copy
// that runs as a kernel) would stall until the guard's watchdog, and
// learn would then cut MaxOps for the rest of the run. So the first use of
// each runs unheld (that sample reports held=false; warm-up reps absorb
// it) and later ones are held. b.mu is held.
//
// Note: CUDA_MODULE_LOADING=EAGER before cuInit would avoid the stall
// too, but it loads every kernel of cuBLAS at start (seconds, and memory)
// and lives in the process environment, which belongs to the user; warming
// keeps the default and says what it did in the held column.
func (b *CUDABackend) warmUp(key any) {
	if b.warm[key] {
		return
	}
	b.warm[key] = true
	if b.active != nil {
		b.active.Unhold()
	}
}

// learn adapts the hold to a queuing call that blocked behind it (the
// driver's queue was full): a batch taken as one operation is counted by
// its copies from then on; otherwise the timer's cap on held operations
// drops to half of what blocked, so later samples go unheld up front
// rather than stalling for the watchdog's delay.
func (b *CUDABackend) learn(batch bool, ops, copies int) {
	t := b.active
	what := fmt.Sprintf("%d operations", ops)
	if batch && !b.batchBlocks {
		b.batchBlocks = true
		what = fmt.Sprintf("a batch of %d copies", copies)
	} else {
		t.MaxOps = max(1, min(t.MaxOps, ops/2))
	}
	if b.cfg.Log != nil {
		fmt.Fprintf(b.cfg.Log, "kvtier: warning: cuda: %s blocked behind the held stream for %v; samples that large now run unheld (held=false)\n", what, t.GuardDelay)
	}
}

// GEMMs issues ops through cuBLAS on the backend's stream, in bf16 with
// fp32 accumulation. The operands are one device scratch allocation grown
// to the largest op (its contents do not matter); growing it, and
// creating the cuBLAS handle on first use, lets go of a held stream
// first, since freeing device memory synchronises the device.
func (b *CUDABackend) GEMMs(ops []kv.GEMM) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	var need int64
	for _, g := range ops {
		if g.M <= 0 || g.N <= 0 || g.K <= 0 {
			return fmt.Errorf("cuda backend: gemm %s has a zero dimension (%d×%d×%d)", g.Name, g.M, g.N, g.K)
		}
		bt := int64(max(g.Batch, 1))
		need = max(need, 2*bt*(int64(g.M)*int64(g.K)+int64(g.K)*int64(g.N)+int64(g.M)*int64(g.N)))
	}
	if len(ops) == 0 {
		return nil
	}
	if b.handle == nil {
		if b.active != nil {
			b.active.Unhold()
		}
		if err := b.openBLAS(); err != nil {
			return err
		}
	}
	if err := b.growScratch(need); err != nil {
		return err
	}
	base := b.scratch.Ptr()
	list := make([]cuda.Gemm, len(ops))
	for i, g := range ops {
		bt := uint64(max(g.Batch, 1))
		a := base
		bb := a + 2*bt*uint64(g.M)*uint64(g.K)
		c := bb + 2*bt*uint64(g.K)*uint64(g.N)
		list[i] = cuda.Gemm{M: g.M, N: g.N, K: g.K, Batch: int(bt), A: a, B: bb, C: c}
	}
	for _, g := range list {
		b.warmUp(cuda.Gemm{M: g.M, N: g.N, K: g.K, Batch: g.Batch}) // the shape alone
	}
	if b.active != nil {
		// About one kernel per GEMM (split-K may add one; the guard
		// covers a queue that fills all the same).
		b.active.Queue(len(ops))
	}
	return b.issue(func() error {
		n, err := b.handle.Gemms(list)
		if err != nil && n < len(ops) {
			return fmt.Errorf("%s: %w", ops[n].Name, err)
		}
		return err
	}, false, len(ops), len(ops))
}

// growScratch makes the GEMM operands' scratch at least need bytes,
// letting go of a held stream first: freeing device memory synchronises
// the device. b.mu is held.
func (b *CUDABackend) growScratch(need int64) error {
	if b.scratch != nil && b.scratch.Size() >= need {
		return nil
	}
	if b.active != nil {
		b.active.Unhold()
	}
	if b.scratch != nil {
		if err := b.scratch.Free(); err != nil {
			return fmt.Errorf("cuda backend: gemm scratch: %w", err)
		}
		b.scratch = nil
	}
	m, err := b.ctx.AllocDevice(need)
	if err != nil {
		return fmt.Errorf("cuda backend: gemm scratch: %w", err)
	}
	b.scratch = m
	return nil
}

func (b *CUDABackend) openBLAS() error {
	if b.blasErr != nil {
		return b.blasErr
	}
	bl, err := cuda.OpenBLAS(b.cfg.LibCUBLAS, b.drv.Version, b.cfg.CUBLASDirs)
	if err != nil {
		b.blasErr = fmt.Errorf("cuda backend: %w", err)
		return b.blasErr
	}
	h, err := bl.NewHandle(b.stream)
	if err != nil {
		b.blasErr = fmt.Errorf("cuda backend: cublas: %w", err)
		return b.blasErr
	}
	b.blas, b.handle = bl, h
	return nil
}

// Timer returns the backend's timer for t: Queued holds the stream until
// Stop (where the device can), Blocking records events without holding.
// The returned Timer implements interface{ Held() bool }.
func (b *CUDABackend) Timer(t Timing) Timer {
	if t == Queued {
		return &cudaTimer{b: b, t: b.queued}
	}
	return &cudaTimer{b: b, t: b.blocking}
}

// A HeldTimer is a Timer that says whether its last sample was held
// until all its work was queued: the "held" column of a sweep row. The
// cuda backend's timers implement it; a timer that does not hold
// (the host backend's clock) need not.
type HeldTimer interface {
	Timer
	Held() bool
}

var _ HeldTimer = (*cudaTimer)(nil)

type cudaTimer struct {
	b *CUDABackend
	t *cuda.Timer
}

func (t *cudaTimer) Start() error {
	t.b.mu.Lock()
	defer t.b.mu.Unlock()
	if t.b.active != nil {
		t.b.active.Unhold()
	}
	t.b.active = t.t
	if err := t.t.Start(); err != nil {
		t.b.active = nil
		return fmt.Errorf("cuda backend: %w", err)
	}
	return nil
}

func (t *cudaTimer) Stop() (float64, error) {
	t.b.mu.Lock()
	if t.b.active == t.t {
		t.b.active = nil
	}
	t.b.mu.Unlock()
	sec, err := t.t.Stop()
	if err != nil {
		return 0, fmt.Errorf("cuda backend: %w", err)
	}
	return sec, nil
}

// Held reports whether the last sample was held until its work was all
// queued.
func (t *cudaTimer) Held() bool { return t.t.Held() }

// Kind returns TimingEvents: samples are timed with CUDA events.
func (t *cudaTimer) Kind() string { return TimingEvents }

// Sync lets go of a held stream and waits for all issued work.
func (b *CUDABackend) Sync() error {
	b.mu.Lock()
	if b.active != nil {
		b.active.Unhold()
	}
	b.mu.Unlock()
	if err := b.stream.Sync(); err != nil {
		return fmt.Errorf("cuda backend: %w", err)
	}
	return nil
}

// ExportDMABuf exports the device buffer x as a DMA-BUF for GPUDirect
// RDMA (cuMemGetHandleForAddressRange): the range is the whole allocation
// that holds x (cuMemGetAddressRange), its size rounded up to the page;
// offset is where x starts in it. A range must be page aligned inside one
// allocation: rounding x's own start down to a page could step into
// another allocation, so an allocation that does not start on a page (a
// small one from the driver's sub-allocator) is not exported.
// errors.Is(err, cuda.ErrUnsupported) where the driver, the device or the
// allocation cannot.
func (b *CUDABackend) ExportDMABuf(x Buffer) (fd int, offset int64, err error) {
	c, err := b.buffer(x, "exported")
	if err != nil {
		return -1, 0, err
	}
	if c.dev == nil {
		return -1, 0, fmt.Errorf("cuda backend: DMA-BUF export of %s memory: %w", c.kind, cuda.ErrUnsupported)
	}
	if !b.drv.Has("cuMemGetHandleForAddressRange") || b.info.Attrs[cuda.AttrDMABufSupported] != 1 {
		return -1, 0, fmt.Errorf("cuda backend: DMA-BUF export on %s (driver %s): %w", b.Device(), b.drv.VersionString(), cuda.ErrUnsupported)
	}
	p := c.dev.Ptr()
	base, size, err := b.ctx.AddressRange(p)
	if err != nil {
		return -1, 0, fmt.Errorf("cuda backend: DMA-BUF export: %w", err)
	}
	pg := int64(os.Getpagesize())
	if base%uint64(pg) != 0 {
		return -1, 0, fmt.Errorf("cuda backend: DMA-BUF export: allocation at %#x does not start on a page: %w", base, cuda.ErrUnsupported)
	}
	fd, err = b.ctx.DMABuf(base, (size+pg-1)/pg*pg)
	if err != nil {
		return -1, 0, fmt.Errorf("cuda backend: DMA-BUF export: %w", err)
	}
	return fd, int64(p - base), nil
}

// Close releases the backend's own resources; buffers are their owners'.
func (b *CUDABackend) Close() error {
	var errs []error
	if b.stream != nil {
		if b.active != nil {
			b.active.Unhold()
			b.active = nil
		}
		errs = append(errs, b.stream.Sync())
	}
	release(&errs, &b.handle, (*cuda.Handle).Destroy)
	// Note: libcublas and libcuda stay loaded (no dlclose), as in NCCL:
	// unloading the driver with its threads alive is not safe.
	b.blas = nil
	release(&errs, &b.scratch, (*cuda.DeviceMem).Free)
	closeOnce(&errs, &b.queued, &b.blocking)
	b.plan.Free()
	release(&errs, &b.stream, (*cuda.Stream).Destroy)
	release(&errs, &b.ctx, (*cuda.Context).Release)
	return errors.Join(errs...)
}
