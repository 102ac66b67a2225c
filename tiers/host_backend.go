package tiers

import (
	"cmp"
	"errors"
	"fmt"
	"os"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"
	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas32"

	"github.com/kvtier/kvtier/internal/bounds"
	"github.com/kvtier/kvtier/kv"
	"github.com/kvtier/kvtier/system"
	"github.com/kvtier/kvtier/system/meminfo"
	"github.com/kvtier/kvtier/units"
)

func init() {
	RegisterBackend(BackendSpec{Name: "host", Priority: 0, Open: OpenHost})
}

// hostGEMMRows bounds the rows of one host GEMM call: larger GEMMs are
// issued in row blocks (same FLOPs) so scratch stays small at 64k tokens.
const hostGEMMRows = 1024

// A HostBackend runs everything in host DRAM: it is the stand-in for a GPU
// on machines without one. All memory kinds are anonymous mappings (page
// aligned, off the Go heap, so they can be registered for RDMA); "device"
// memory is one more such mapping. Copies are memmove on the calling
// goroutine, GEMMs are gonum's fp32 Sgemm, and the timer is the monotonic
// clock.
type HostBackend struct {
	cfg    BackendConfig
	device string

	mu      sync.Mutex
	warned  bool
	a, b, c []float32 // GEMM scratch, grown to the largest op and reused
}

// OpenHost opens the host backend. cfg.NUMA >= 0 binds buffers to that
// node where the kernel allows it (best effort, with a warning on cfg.Log).
func OpenHost(cfg BackendConfig) (Backend, error) {
	model := "unknown CPU"
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		if m, _ := system.ParseCPUInfo(string(b)); m != "" {
			model = m
		}
	}
	return &HostBackend{cfg: cfg, device: fmt.Sprintf("cpu (%s, host stand-in)", model)}, nil
}

// Name returns "host".
func (h *HostBackend) Name() string { return "host" }

// Device describes the CPU and says it stands in for a GPU.
func (h *HostBackend) Device() string { return h.device }

// CopyModes lists percopy and contiguous: there is no batched copy call
// on the host.
func (h *HostBackend) CopyModes() []CopyMode { return []CopyMode{PerCopy, Contiguous} }

// StandIn is what the host backend's rows say it is.
const StandIn = "host stand-in (CPU DRAM), not a GPU"

// Caps says that "device" memory is DRAM standing in for a GPU.
func (h *HostBackend) Caps() Caps { return Caps{StandIn: StandIn} }

// ComputeDType returns "fp32".
func (h *HostBackend) ComputeDType() string { return "fp32" }

// LinkGBps returns 0: the memory bandwidth of the host is not known here.
func (h *HostBackend) LinkGBps(src, dst MemKind) float64 { return 0 }

// Sync returns at once: host work is done when it returns.
func (h *HostBackend) Sync() error { return nil }

// Close releases the GEMM scratch.
func (h *HostBackend) Close() error {
	h.mu.Lock()
	h.a, h.b, h.c = nil, nil, nil
	h.mu.Unlock()
	return nil
}

// Alloc maps size bytes of anonymous memory and faults every page in, so
// that the first timed copy does not pay for page faults.
func (h *HostBackend) Alloc(kind MemKind, size int64) (Buffer, error) {
	switch kind {
	case Device, Pinned, Pageable:
	default:
		return nil, fmt.Errorf("host backend: unknown memory kind %q", kind)
	}
	if size <= 0 || size > int64(^uint(0)>>1) {
		return nil, fmt.Errorf("host backend: alloc of %d bytes", size)
	}
	mem, err := unix.Mmap(-1, 0, int(size), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		return nil, fmt.Errorf("host backend: mmap %d bytes: %w", size, err)
	}
	var placed string
	if h.cfg.NUMA >= 0 {
		p, w, err := placeOnNode(cmp.Or(h.cfg.Root, "/"), mem, h.cfg.NUMA)
		switch {
		case err != nil:
			h.warn("host backend: binding buffers to NUMA node %d: %v (placement left to the kernel)", h.cfg.NUMA, err)
		case w != "":
			h.warn("host backend: %s", w)
		}
		placed = p
	}
	if err := unix.Madvise(mem, unix.MADV_POPULATE_WRITE); err != nil {
		pg := os.Getpagesize()
		for i := 0; i < len(mem); i += pg {
			mem[i] = 0
		}
	}
	return &hostBuffer{kind: kind, mem: mem, placed: placed}, nil
}

func (h *HostBackend) warn(format string, args ...any) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.warned || h.cfg.Log == nil {
		return
	}
	h.warned = true
	fmt.Fprintf(h.cfg.Log, "kvtier: warning: "+format+"\n", args...)
}

// NUMA memory policies of mbind(2).
const (
	mpolPreferred = 1
	mpolBind      = 2
)

// placeOnNode binds mem's pages to NUMA node node (MPOL_BIND) when they
// fit in what the node can give (meminfo.NodeFree under root), and
// otherwise only prefers it (MPOL_PREFERRED): a strict bind that cannot
// be satisfied while the pages are faulted in gets the process
// OOM-killed, where a preference spills to other nodes. It returns where
// the pages went, for the rows ("node1", or "node1 preferred (...)"), and
// a warning when they may not all be there.
func placeOnNode(root string, mem []byte, node int) (placement, warning string, err error) {
	free, ferr := meminfo.NodeFree(root, node)
	if ferr == nil && int64(len(mem)) > free {
		if err := mbind(mem, node, mpolPreferred); err != nil {
			return "", "", err
		}
		placement = fmt.Sprintf("node%d preferred (%s did not fit in its %s free)", node,
			units.FormatBytes(int64(len(mem))), units.FormatBytes(free))
		return placement, fmt.Sprintf("NUMA node %d has %s free, too little for a %s pool: placed there as far as it fits, the rest on other nodes (numa_placement)",
			node, units.FormatBytes(free), units.FormatBytes(int64(len(mem)))), nil
	}
	if err := mbind(mem, node, mpolBind); err != nil {
		return "", "", err
	}
	return fmt.Sprintf("node%d", node), "", nil
}

// mbind applies memory policy mode for node to the pages of mem.
func mbind(mem []byte, node, mode int) error {
	if node >= 64 {
		return fmt.Errorf("node %d beyond the supported 64", node)
	}
	mask := uint64(1) << uint(node)
	_, _, errno := unix.Syscall6(unix.SYS_MBIND, uintptr(unsafe.Pointer(&mem[0])), uintptr(len(mem)),
		uintptr(mode), uintptr(unsafe.Pointer(&mask)), 65, 0)
	if errno != 0 {
		return errno
	}
	return nil
}

// A Placed buffer says where its pages went: "node1", "node1 preferred
// (...)" when the node could not hold them all, "" where placement was
// left to the kernel.
type Placed interface{ Placement() string }

// Copy runs plan from src to dst. PerCopy is one copy() per chunk;
// Contiguous is one copy of the summed payload (ContiguousSpan).
func (h *HostBackend) Copy(dst, src Buffer, plan []kv.Copy, mode CopyMode) error {
	d, s := dst.Host(), src.Host()
	if d == nil || s == nil {
		return errors.New("host backend: copy needs host-resident buffers")
	}
	switch mode {
	case PerCopy:
		if err := kv.CheckPlan(plan, int64(len(s)), int64(len(d))); err != nil {
			return fmt.Errorf("host backend: %w", err)
		}
		for _, c := range plan {
			copy(d[c.Dst:c.Dst+c.Bytes], s[c.Src:c.Src+c.Bytes])
		}
		return nil
	case Contiguous:
		c, err := kv.ContiguousSpan(plan, int64(len(s)), int64(len(d)))
		if err != nil {
			return fmt.Errorf("host backend: %w", err)
		}
		copy(d[c.Dst:c.Dst+c.Bytes], s[c.Src:c.Src+c.Bytes])
		return nil
	}
	return fmt.Errorf("host backend: %s", UnsupportedModeReason(mode))
}

// GEMMs runs each op with gonum's fp32 Sgemm on scratch operands; a
// strided batch runs its GEMM Batch times on the same operands, and M is
// issued in blocks of at most hostGEMMRows rows.
func (h *HostBackend) GEMMs(ops []kv.GEMM) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	var na, nb, nc int
	for _, g := range ops {
		if g.M <= 0 || g.N <= 0 || g.K <= 0 {
			return fmt.Errorf("host backend: gemm %s has a zero dimension (%d×%d×%d)", g.Name, g.M, g.N, g.K)
		}
		m := min(g.M, hostGEMMRows)
		na, nb, nc = max(na, m*g.K), max(nb, g.K*g.N), max(nc, m*g.N)
	}
	grow := func(p *[]float32, n int) {
		if len(*p) < n {
			*p = make([]float32, n)
			for i := range *p {
				(*p)[i] = float32(i%7) * 0.125
			}
		}
	}
	grow(&h.a, na)
	grow(&h.b, nb)
	grow(&h.c, nc)
	for _, g := range ops {
		b := blas32.General{Rows: g.K, Cols: g.N, Stride: g.N, Data: h.b[:g.K*g.N]}
		for range max(g.Batch, 1) {
			for r := 0; r < g.M; r += hostGEMMRows {
				m := min(hostGEMMRows, g.M-r)
				a := blas32.General{Rows: m, Cols: g.K, Stride: g.K, Data: h.a[:m*g.K]}
				c := blas32.General{Rows: m, Cols: g.N, Stride: g.N, Data: h.c[:m*g.N]}
				blas32.Gemm(blas.NoTrans, blas.NoTrans, 1, a, b, 0, c)
			}
		}
	}
	return nil
}

// Timer returns a monotonic-clock timer; the host runs work inside Fetch,
// so both timings are the same.
func (h *HostBackend) Timer(t Timing) Timer { return &ClockTimer{Sync: h.Sync} }

// A hostBuffer is an anonymous mapping.
type hostBuffer struct {
	kind   MemKind
	mem    []byte
	placed string // where the pages went (Placed)
}

// Placement says where the buffer's pages went.
func (b *hostBuffer) Placement() string { return b.placed }

func (b *hostBuffer) Kind() MemKind { return b.kind }
func (b *hostBuffer) Size() int64   { return int64(len(b.mem)) }
func (b *hostBuffer) Host() []byte  { return b.mem }

func (b *hostBuffer) Addr() uintptr {
	if len(b.mem) == 0 {
		return 0
	}
	return uintptr(unsafe.Pointer(&b.mem[0]))
}

func (b *hostBuffer) ReadAt(p []byte, off int64) (int, error) {
	return hostReadAt("host buffer", b.mem, p, off)
}

func (b *hostBuffer) WriteAt(p []byte, off int64) (int, error) {
	return hostWriteAt("host buffer", b.mem, p, off)
}

// hostReadAt is io.ReaderAt over the host-resident bytes h of a buffer
// (nil once it is closed), for every backend's host buffers; what names
// the buffer in errors.
func hostReadAt(what string, h, p []byte, off int64) (int, error) {
	if h == nil {
		return 0, fmt.Errorf("%s: closed", what)
	}
	n, err := bounds.ReadAt(what, int64(len(h)), off, len(p))
	if n > 0 {
		copy(p[:n], h[off:])
	}
	return n, err
}

// hostWriteAt is io.WriterAt over h, as hostReadAt; a write that would
// not fit whole is refused before any byte is written.
func hostWriteAt(what string, h, p []byte, off int64) (int, error) {
	if h == nil {
		return 0, fmt.Errorf("%s: closed", what)
	}
	if err := bounds.WriteAt(what, int64(len(h)), off, len(p)); err != nil {
		return 0, err
	}
	return copy(h[off:], p), nil
}

func (b *hostBuffer) Close() error {
	if b.mem == nil {
		return nil
	}
	err := unix.Munmap(b.mem)
	b.mem = nil
	if err != nil {
		return fmt.Errorf("host buffer: munmap: %w", err)
	}
	return nil
}
