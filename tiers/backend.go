package tiers

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/kvtier/kvtier/kv"
	"github.com/kvtier/kvtier/peer"
	"github.com/kvtier/kvtier/registry"
)

// A MemKind is where a buffer lives.
type MemKind string

// Memory kinds. On the host backend "device" memory is a second DRAM
// buffer standing in for the GPU.
const (
	Device   MemKind = "device"
	Pinned   MemKind = "pinned"
	Pageable MemKind = "pageable"
)

// A Buffer is memory owned by a backend, of a kind: a peer.Memory, so a
// pool of the remote tier or of kvtier serve can live in it. Host-resident
// buffers expose their bytes through Host; device buffers return nil there
// and are read and written through ReadAt and WriteAt (synchronous, for
// set-up and verification, never timed). Addr is the device pointer or
// host virtual address of byte 0.
type Buffer interface {
	Kind() MemKind
	peer.Memory
}

// A CopyMode is how a plan of chunk copies is issued.
type CopyMode string

// Copy modes.
const (
	// PerCopy issues one asynchronous copy per chunk (the host backend's
	// memmove loop).
	PerCopy CopyMode = "percopy"
	// Batch issues the whole plan in one cuMemcpyBatchAsync call where the
	// driver has it.
	Batch CopyMode = "batch"
	// Contiguous copies the same payload as one copy: the upper bound.
	Contiguous CopyMode = "contiguous"
)

// A Timing is how the harness times a tier's Fetch.
type Timing int

// Timings.
const (
	// Queued: the tier only enqueues work on the backend's stream. The
	// backend holds the stream until Stop so host launch cost stays out,
	// and times it with device events (the host backend runs the work
	// inside Fetch and times it with the monotonic clock).
	Queued Timing = iota
	// Blocking: the tier blocks the host while it works (network reads).
	// The timer starts before Fetch and stops after the backend has drained
	// its stream.
	Blocking
)

// A Timer times one sample on a backend.
type Timer interface {
	// Start begins a sample. For Queued timing the backend holds its
	// stream so that the work enqueued until Stop starts at once.
	Start() error
	// Stop releases the stream, waits for the work and returns the elapsed
	// seconds.
	Stop() (float64, error)
	// Kind is how it measures, the timing column: "events" (CUDA events
	// on the device) or "clock" (the host's monotonic clock).
	Kind() string
}

// Timer kinds.
const (
	TimingEvents = "events"
	TimingClock  = "clock"
)

// A ClockTimer times with the monotonic clock; Sync, when not nil, is
// waited for before the clock is read at Stop.
type ClockTimer struct {
	Sync  func() error
	start time.Time
}

// Start reads the clock.
func (t *ClockTimer) Start() error {
	t.start = time.Now()
	return nil
}

// Stop waits for Sync and returns the seconds since Start.
func (t *ClockTimer) Stop() (float64, error) {
	if t.start.IsZero() {
		return 0, errors.New("timer stopped before it started")
	}
	if t.Sync != nil {
		if err := t.Sync(); err != nil {
			return 0, err
		}
	}
	return time.Since(t.start).Seconds(), nil
}

// Kind returns TimingClock.
func (t *ClockTimer) Kind() string { return TimingClock }

// A Backend is where the engine's working pool lives and how copies and
// compute reach it.
type Backend interface {
	// Name is "host" or "cuda"; it goes into every row's backend column.
	Name() string
	// Device describes the device for rows and plots, e.g.
	// "cpu (host stand-in)" or "NVIDIA H200 [0000:19:00.0]".
	Device() string
	// Alloc returns a buffer of size bytes of the given kind. Device memory
	// is not initialised.
	Alloc(kind MemKind, size int64) (Buffer, error)
	// CopyModes lists the copy modes this backend can run.
	CopyModes() []CopyMode
	// Copy issues the plan from src to dst in the given mode (enqueued on
	// the stream for the cuda backend, done before return on the host).
	Copy(dst, src Buffer, plan []kv.Copy, mode CopyMode) error
	// GEMMs issues the given matrix multiplies (operands are the backend's
	// own scratch; their values do not matter).
	GEMMs(ops []kv.GEMM) error
	// ComputeDType names the dtype GEMMs run in ("bf16", "fp32").
	ComputeDType() string
	// Timer returns a timer for one sample.
	Timer(t Timing) Timer
	// Sync waits for all issued work.
	Sync() error
	// Caps says what the backend can do, so that tiers and suites branch
	// on capabilities, never on the backend's name.
	Caps() Caps
	// LinkGBps is the payload limit in GB/s of the link between memory of
	// kinds src and dst (PCIe gen×width for host to device), 0 if unknown.
	LinkGBps(src, dst MemKind) float64
	Close() error
}

// Caps are the capabilities of a backend.
type Caps struct {
	// DeviceMemory is true when Device buffers are a device's own memory;
	// false on the host backend, whose "device" pool is DRAM standing in
	// for a GPU.
	DeviceMemory bool
	// StandIn names what the backend stands in for when it is not the
	// real device ("host stand-in (CPU DRAM), not a GPU"), "" otherwise.
	StandIn string
}

// deviceMem is the memory kind of b's Device buffers as a row names it:
// device on a GPU, pageable on the host stand-in, whose "device" pool is
// DRAM (so that src_mem or dst_mem agrees with the row's path).
func deviceMem(b Backend) MemKind {
	if b.Caps().DeviceMemory {
		return Device
	}
	return Pageable
}

// BackendConfig carries the options a backend is opened with.
type BackendConfig struct {
	GPU  int // CUDA device ordinal
	NUMA int // NUMA node for host pools; -1 leaves placement to the kernel; NUMAAuto: the GPU's
	// Root is where sysfs is read (the GPU's NUMA node and PCIe link);
	// "" is "/".
	Root string
	// LibCUDA, LibCUBLAS and LibCUFile are the paths of the driver,
	// cuBLAS and cuFile (GPUDirect Storage) libraries; "" tries the usual
	// names. cmd/kvtier fills them from KVTIER_LIBCUDA, KVTIER_LIBCUBLAS
	// and KVTIER_LIBCUFILE.
	LibCUDA, LibCUBLAS, LibCUFile string
	// CUBLASDirs lists where to look for libcublas when no soname loads
	// (pip's wheels in the site-packages of the Python on PATH); nil: none.
	CUBLASDirs func() ([]string, error)
	Log        io.Writer
}

// NUMAAuto in BackendConfig.NUMA puts host pools on the NUMA node of the
// GPU in use (the cuda backend reads it from sysfs); where that is
// unknown, and on the host backend, placement is left to the kernel.
const NUMAAuto = -2

// A BackendSpec registers a backend.
type BackendSpec struct {
	Name string
	// Priority orders auto-selection: the highest available backend wins.
	Priority int
	Open     func(cfg BackendConfig) (Backend, error)
}

// backends are ordered by falling priority.
var backends = registry.New("backend", func(s BackendSpec) string { return s.Name },
	func(a, b BackendSpec) int { return cmp.Compare(b.Priority, a.Priority) })

// RegisterBackend adds a backend; it is called from init functions.
func RegisterBackend(s BackendSpec) { backends.Add(s) }

// BackendNames lists the registered backends by falling priority.
func BackendNames() []string { return backends.Names() }

// OpenBackend opens the named backend. "auto" tries every backend by
// falling priority and returns the first that opens, with the reasons the
// others did not (for the manifest and stderr).
func OpenBackend(ctx context.Context, name string, cfg BackendConfig) (Backend, []string, error) {
	_ = ctx
	if name == "auto" {
		var why []string
		for _, n := range BackendNames() {
			b, err := openOne(n, cfg)
			if err == nil {
				return b, why, nil
			}
			why = append(why, fmt.Sprintf("%s: %v", n, err))
		}
		return nil, why, fmt.Errorf("no backend could be opened: %s", strings.Join(why, "; "))
	}
	b, err := openOne(name, cfg)
	return b, nil, err
}

func openOne(name string, cfg BackendConfig) (Backend, error) {
	s, ok := backends.Lookup(name)
	if !ok {
		return nil, fmt.Errorf("unknown backend %q (known: auto, %s)", name, strings.Join(BackendNames(), ", "))
	}
	return s.Open(cfg)
}

// UnsupportedModeReason is the reason a row gives for a copy mode the
// backend lacks.
func UnsupportedModeReason(m CopyMode) string {
	switch m {
	case Batch:
		return "copy mode batch needs cuMemcpyBatchAsync, which this backend lacks"
	}
	return fmt.Sprintf("copy mode %s is not supported by this backend", m)
}

// CopyModes lists the known copy modes in display order.
func CopyModes() []CopyMode { return []CopyMode{PerCopy, Batch, Contiguous} }

// ParseCopyMode returns the copy mode named s.
func ParseCopyMode(s string) (CopyMode, error) {
	for _, m := range CopyModes() {
		if string(m) == s {
			return m, nil
		}
	}
	return "", fmt.Errorf("unknown copy mode %q (known: percopy, batch, contiguous)", s)
}
