package diskio

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/kvtier/kvtier/csrc/cufilewrap"
	"github.com/kvtier/kvtier/internal/native"
	"github.com/kvtier/kvtier/kv"
)

// CUFile is the way of submitting reads and writes of GPUDirect Storage
// (the disk tier's --io cufile): cuFileRead straight into GPU memory,
// cuFileWrite straight from it.
const CUFile = "cufile"

// A DeviceContext makes the CUDA context that owns the device buffer
// current in cuFile's calls: the loaded cuCtxSetCurrent and the
// CUcontext, from the CUDA backend.
type DeviceContext = cufilewrap.Ctx

// A CUFileError is a failed cuFile call.
type CUFileError struct {
	Op    string // the cuFile function, or the step that failed
	Code  int    // the CUfileOpError, or a cufilewrap.Code* value
	CUErr int    // the CUresult of a CUDA driver error
	Errno syscall.Errno
	Msg   string // the loader's detail
}

var cuFileCodes = map[int]string{
	5001: "CU_FILE_DRIVER_NOT_INITIALIZED", 5007: "CU_FILE_PLATFORM_NOT_SUPPORTED",
	5008: "CU_FILE_IO_NOT_SUPPORTED", 5009: "CU_FILE_DEVICE_NOT_SUPPORTED", 5010: "CU_FILE_NVFS_DRIVER_ERROR",
	5011: "CU_FILE_CUDA_DRIVER_ERROR", 5012: "CU_FILE_CUDA_POINTER_INVALID", 5020: "CU_FILE_DIO_NOT_SET",
	5022: "CU_FILE_INVALID_VALUE", 5023: "CU_FILE_MEMORY_ALREADY_REGISTERED", 5030: "CU_FILE_INTERNAL_ERROR",
}

func (e *CUFileError) Error() string {
	switch {
	case e.Msg != "":
		return e.Op + ": " + e.Msg
	case e.Code == cufilewrap.CodeErrno:
		return fmt.Sprintf("%s: %v", e.Op, e.Errno)
	case e.Code == cufilewrap.CodeContext:
		return fmt.Sprintf("%s: CUresult %d", e.Op, e.CUErr)
	}
	name := cuFileCodes[e.Code]
	if name == "" {
		name = "cuFile error"
	}
	s := fmt.Sprintf("%s: %s (%d)", e.Op, name, e.Code)
	if e.CUErr != 0 {
		s += fmt.Sprintf(", CUresult %d", e.CUErr)
	}
	return s
}

func cuFileErr(st cufilewrap.Status) error {
	if st.OK() {
		return nil
	}
	return &CUFileError{Op: st.Op, Code: st.Code, CUErr: st.CUErr, Errno: syscall.Errno(st.Errno), Msg: st.Msg}
}

// libs are the libcufiles loaded, by path: each is loaded once per
// process, failures included, and never unloaded, as the other native
// libraries are.
var libs native.Cache[*cufilewrap.Lib]

// load returns libcufile from path ("" for the usual names), loading it
// the first time.
func load(path string) (*cufilewrap.Lib, error) {
	return libs.Load(path, func(path string) (*cufilewrap.Lib, error) {
		l, st := cufilewrap.Load(path)
		if !st.OK() {
			return nil, cuFileErr(st)
		}
		return l, nil
	})
}

// LoadCUFile loads libcufile from path ("" for the usual names) and
// says which library and which cuFileDriverClose it found, for the
// manifest; it opens no driver (that needs a GPU context).
func LoadCUFile(path string) (string, error) {
	l, err := load(path)
	if err != nil {
		return "", err
	}
	return l.Path + " (" + l.Close + ")", nil
}

// ProbeGDS loads libcufile from lib ("" for the usual names) and opens
// and closes its driver with ctx current: nil when GPUDirect Storage can
// run here, else why not.
func ProbeGDS(lib string, ctx DeviceContext) error {
	l, err := load(lib)
	if err != nil {
		return err
	}
	if err := cuFileErr(l.DriverOpen(ctx)); err != nil {
		return err
	}
	return cuFileErr(l.DriverClose())
}

// A GDS reads files into one device buffer, or writes them from it,
// with cuFile (GPUDirect Storage): the buffer is registered once, each
// file on its first transfer, and Depth goroutines issue cuFileRead or
// cuFileWrite calls, a batch per cgo call.
type GDS struct {
	lib   *cufilewrap.Lib
	ctx   DeviceContext
	base  uintptr
	size  int64
	depth int

	props    cufilewrap.DriverProps
	propsErr error // why props could not be read, nil if they were

	mu      sync.Mutex
	handles map[*File]cufilewrap.Handle
	reqs    [][]cufilewrap.Req // per goroutine, reused
}

// OpenGDS loads libcufile from lib, opens its driver and registers the
// size bytes of device memory at base, with ctx current.
func OpenGDS(lib string, ctx DeviceContext, base uintptr, size int64, depth int) (*GDS, error) {
	if depth < 1 {
		return nil, fmt.Errorf("diskio: io depth %d", depth)
	}
	l, err := load(lib)
	if err != nil {
		return nil, err
	}
	if err := cuFileErr(l.DriverOpen(ctx)); err != nil {
		return nil, err
	}
	if err := cuFileErr(l.BufRegister(ctx, base, size)); err != nil {
		l.DriverClose()
		return nil, err
	}
	props, st := l.DriverProps()
	return &GDS{lib: l, ctx: ctx, base: base, size: size, depth: depth, props: props, propsErr: cuFileErr(st),
		handles: map[*File]cufilewrap.Handle{}, reqs: make([][]cufilewrap.Req, depth)}, nil
}

// Mode says how cuFile moves g's bytes: "native" (GPUDirect Storage,
// DMA between the disk and GPU memory) only where the nvidia-fs module
// is loaded (module, from /proc/driver/nvidia-fs) and the driver's
// properties report an nvidia-fs version in use; else "compatibility"
// (cuFile's POSIX fallback through host memory), with the reason.
func (g *GDS) Mode(module bool) (mode, reason string) {
	return GDSMode(module, g.props, g.propsErr)
}

// GDSMode is GDS.Mode from its inputs: whether the nvidia-fs module is
// loaded and what cuFileDriverGetProperties returned (props, err).
func GDSMode(module bool, props cufilewrap.DriverProps, err error) (mode, reason string) {
	compat := "compatibility"
	switch {
	case err != nil:
		return compat, fmt.Sprintf("cuFile driver properties unread (%v)", err)
	case props.Major == 0 && props.Minor == 0 && !module:
		return compat, "no nvidia-fs module (/proc/driver/nvidia-fs) and cuFile reports nvidia-fs 0.0"
	case props.Major == 0 && props.Minor == 0:
		return compat, "nvidia-fs module loaded but cuFile reports nvidia-fs 0.0 (not in use)"
	case !module:
		return compat, fmt.Sprintf("cuFile reports nvidia-fs %d.%d but /proc/driver/nvidia-fs is absent", props.Major, props.Minor)
	}
	return "native", fmt.Sprintf("nvidia-fs %d.%d", props.Major, props.Minor)
}

// Depth is the number of goroutines reading or writing at once.
func (g *GDS) Depth() int { return g.depth }

func (g *GDS) handle(f *File) (cufilewrap.Handle, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if h, ok := g.handles[f]; ok {
		return h, nil
	}
	h, st := g.lib.HandleRegister(f.Fd())
	if err := cuFileErr(st); err != nil {
		return nil, fmt.Errorf("%s: %w", f.Path, err)
	}
	g.handles[f] = h
	return h, nil
}

// Read reads every chunk of plan from f into the device buffer (Src is
// the file offset, Dst the offset in the buffer), spread over Depth
// goroutines; the first failure stops them all and is returned, naming
// the chunk's file offset.
func (g *GDS) Read(ctx context.Context, f *File, plan []kv.Copy) error {
	return g.run(ctx, f, plan, gdsRead)
}

// Write writes every chunk of plan from the device buffer to f (Src is
// the offset in the buffer, Dst the file offset, as a Writer's plan),
// spread over Depth goroutines; the first failure stops them all and is
// returned, naming the chunk's file offset. f must be open for writing.
func (g *GDS) Write(ctx context.Context, f *File, plan []kv.Copy) error {
	return g.run(ctx, f, plan, gdsWrite)
}

// A gdsOp is the direction of a GDS transfer.
type gdsOp int

const (
	gdsRead gdsOp = iota
	gdsWrite
)

// run moves every chunk of plan in direction op over Depth goroutines.
func (g *GDS) run(ctx context.Context, f *File, plan []kv.Copy, op gdsOp) error {
	h, err := g.handle(f)
	if err != nil {
		return err
	}
	n := min(g.depth, len(plan))
	errs := make([]error, n)
	var stop atomic.Bool
	var wg sync.WaitGroup
	for w := range n {
		wg.Go(func() {
			if errs[w] = g.worker(ctx, f, h, plan, op, w, n, &stop); errs[w] != nil {
				stop.Store(true)
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil && !errors.Is(err, errStopped) {
			return err
		}
	}
	return nil
}

var errStopped = errors.New("stopped: another reader or writer failed")

// req turns chunk c of a plan in direction op into a cuFile request:
// Off in the file, Dst in the device buffer.
func (g *GDS) req(c kv.Copy, op gdsOp) (cufilewrap.Req, error) {
	file, dev, verb := c.Src, c.Dst, "read of %d bytes to %d"
	if op == gdsWrite {
		file, dev, verb = c.Dst, c.Src, "write of %d bytes from %d"
	}
	if c.Bytes <= 0 || dev < 0 || file < 0 || dev+c.Bytes > g.size {
		return cufilewrap.Req{}, fmt.Errorf("diskio: "+verb+" outside a device buffer of %d", c.Bytes, dev, g.size)
	}
	return cufilewrap.Req{Off: file, Dst: dev, Len: c.Bytes}, nil
}

// worker moves chunks w, w+n, w+2n, ... of plan, a batch per cgo call.
func (g *GDS) worker(ctx context.Context, f *File, h cufilewrap.Handle, plan []kv.Copy, op gdsOp, w, n int, stop *atomic.Bool) error {
	reqs := g.reqs[w][:0]
	defer func() { g.reqs[w] = reqs }()
	for i := w; i < len(plan); i += n {
		q, err := g.req(plan[i], op)
		if err != nil {
			return err
		}
		reqs = append(reqs, q)
		if len(reqs) < batch && i+n < len(plan) {
			continue
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if stop.Load() {
			return errStopped
		}
		if err := g.submit(f, h, reqs, op); err != nil {
			return err
		}
		reqs = reqs[:0]
	}
	return nil
}

// submit issues reqs in one cgo call and names the request that failed.
func (g *GDS) submit(f *File, h cufilewrap.Handle, reqs []cufilewrap.Req, op gdsOp) error {
	call, verb, short := g.lib.Read, "read", "the file is shorter than expected"
	if op == gdsWrite {
		call, verb, short = g.lib.Write, "write", "the disk took fewer bytes than asked"
	}
	st := call(g.ctx, h, g.base, reqs)
	if st.OK() {
		return nil
	}
	q := reqs[max(st.Index, 0)]
	if st.Code == cufilewrap.CodeShort {
		return fmt.Errorf("%s %s at offset %d: %d of %d bytes (%s)", verb, f.Path, q.Off, st.Got, q.Len, short)
	}
	return fmt.Errorf("%s %s at offset %d (%d bytes): %w", verb, f.Path, q.Off, q.Len, cuFileErr(st))
}

// Forget deregisters f, which the caller is about to close.
func (g *GDS) Forget(f *File) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if h, ok := g.handles[f]; ok {
		g.lib.HandleDeregister(h)
		delete(g.handles, f)
	}
}

// Close deregisters the files and the buffer and closes the driver.
func (g *GDS) Close() error {
	g.mu.Lock()
	for f, h := range g.handles {
		g.lib.HandleDeregister(h)
		delete(g.handles, f)
	}
	g.mu.Unlock()
	return errors.Join(cuFileErr(g.lib.BufDeregister(g.ctx, g.base)), cuFileErr(g.lib.DriverClose()))
}
