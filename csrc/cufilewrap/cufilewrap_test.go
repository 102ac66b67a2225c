package cufilewrap

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/kvtier/kvtier/csrc/cufilewrap/cufiletest"
	"github.com/kvtier/kvtier/csrc/shim"
)

func TestLoadMissing(t *testing.T) {
	t.Parallel()
	missing := filepath.Join(t.TempDir(), "libcufile.so.0")
	_, st := Load(missing)
	if st.Code != shim.CodeNoLibrary || !strings.Contains(st.Msg, missing) {
		t.Errorf("Load of a missing library: %+v", st)
	}
	empty := filepath.Join(t.TempDir(), "libempty.so")
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, st := Load(empty); st.Code != shim.CodeNoLibrary {
		t.Errorf("Load of a file that is no library: %+v", st)
	}
}

// fixture is a loaded fake, a data file and "device memory" (host memory
// here, as the fake libcuda's is).
type fixture struct {
	path string
	lib  *Lib
	f    *os.File
	data []byte
	dev  []byte
}

func setup(t *testing.T, opts ...cufiletest.Option) *fixture {
	t.Helper()
	x := &fixture{path: cufiletest.Build(t, opts...)}
	var st Status
	if x.lib, st = Load(x.path); !st.OK() {
		t.Fatalf("Load: %+v", st)
	}
	x.data = make([]byte, 64<<10)
	for i := range x.data {
		x.data[i] = byte(i * 7)
	}
	name := filepath.Join(t.TempDir(), "data")
	if err := os.WriteFile(name, x.data, 0o644); err != nil {
		t.Fatal(err)
	}
	var err error
	if x.f, err = os.Open(name); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { x.f.Close() })
	if x.dev, err = unix.Mmap(-1, 0, 32<<10, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Munmap(x.dev) })
	return x
}

func (x *fixture) addr() uintptr { return uintptr(unsafe.Pointer(&x.dev[0])) }

// TestRoundTrip opens the driver, registers the file and the buffer,
// reads scattered ranges with a context made current, checks the bytes
// and the context, and undoes every registration.
func TestRoundTrip(t *testing.T) {
	t.Parallel()
	x := setup(t)
	ctx := Ctx{SetCurrent: cufiletest.SetCtxFunc(t, x.path), Ctx: 0x1234}
	if st := x.lib.DriverOpen(ctx); !st.OK() {
		t.Fatal(st)
	}
	h, st := x.lib.HandleRegister(int(x.f.Fd()))
	if !st.OK() {
		t.Fatal(st)
	}
	if st := x.lib.BufRegister(ctx, x.addr(), int64(len(x.dev))); !st.OK() {
		t.Fatal(st)
	}
	reqs := []Req{{Off: 40960, Dst: 0, Len: 4096}, {Off: 0, Dst: 8192, Len: 8192}, {Off: 12288, Dst: 4096, Len: 4096}}
	if st := x.lib.Read(ctx, h, x.addr(), reqs); !st.OK() {
		t.Fatal(st)
	}
	for _, r := range reqs {
		if !bytes.Equal(x.dev[r.Dst:r.Dst+r.Len], x.data[r.Off:r.Off+r.Len]) {
			t.Errorf("read %+v: bytes differ", r)
		}
	}
	if c, n := cufiletest.LastCtx(t, x.path); c != 0x1234 || n != 3 {
		t.Errorf("context 0x%x made current %d times, want 0x1234 three times (open, register, read)", c, n)
	}
	if st := x.lib.BufDeregister(ctx, x.addr()); !st.OK() {
		t.Fatal(st)
	}
	x.lib.HandleDeregister(h)
	if st := x.lib.DriverClose(); !st.OK() {
		t.Fatal(st)
	}
	if s := cufiletest.StateOf(t, x.path); s != (cufiletest.State{Reads: 3}) {
		t.Errorf("after closing: %+v, want nothing open and 3 reads", s)
	}
	if x.lib.Close != "cuFileDriverClose_v2" {
		t.Errorf("close symbol %q, want the _v2 cufile.h binds", x.lib.Close)
	}
}

// TestFailures makes each call fail in turn and checks the status names
// it with cuFile's code.
func TestFailures(t *testing.T) {
	t.Parallel()
	for _, sym := range []string{"cuFileDriverOpen", "cuFileHandleRegister", "cuFileBufRegister", "cuFileRead", "cuFileBufDeregister", "cuFileDriverClose"} {
		t.Run(sym, func(t *testing.T) {
			t.Parallel()
			x := setup(t)
			cufiletest.Fail(t, x.path, sym, 5030)
			var got Status
			calls := []func() Status{
				func() Status { return x.lib.DriverOpen(Ctx{}) },
				func() Status {
					h, st := x.lib.HandleRegister(int(x.f.Fd()))
					if st.OK() {
						st = x.lib.Read(Ctx{}, h, x.addr(), []Req{{Off: 0, Dst: 0, Len: 4096}})
					}
					return st
				},
				func() Status { return x.lib.BufRegister(Ctx{}, x.addr(), 4096) },
				func() Status { return x.lib.BufDeregister(Ctx{}, x.addr()) },
				func() Status { return x.lib.DriverClose() },
			}
			for _, c := range calls {
				if st := c(); !st.OK() && got.OK() {
					got = st
				}
			}
			if got.Op != sym || got.Code != 5030 {
				t.Errorf("first failure %+v, want %s with 5030", got, sym)
			}
		})
	}
}

// TestReadFailures checks the read errors: errno, a cuFile code, a short
// read at the end of the file, a failing context; each names the request.
func TestReadFailures(t *testing.T) {
	t.Parallel()
	x := setup(t)
	if st := x.lib.DriverOpen(Ctx{}); !st.OK() {
		t.Fatal(st)
	}
	h, st := x.lib.HandleRegister(int(x.f.Fd()))
	if !st.OK() {
		t.Fatal(st)
	}
	ok := Req{Off: 0, Dst: 0, Len: 4096}
	st = x.lib.Read(Ctx{}, h, x.addr(), []Req{ok, {Off: 63 << 10, Dst: 4096, Len: 4096}})
	if st.Code != CodeShort || st.Index != 1 || st.Got != 1024 {
		t.Errorf("short read: %+v", st)
	}
	cufiletest.Fail(t, x.path, "cuFileRead", -1)
	if st := x.lib.Read(Ctx{}, h, x.addr(), []Req{ok}); st.Code != CodeErrno || syscall.Errno(st.Errno) != syscall.EIO || st.Index != 0 {
		t.Errorf("read failing with errno: %+v", st)
	}
	cufiletest.Fail(t, x.path, "cuFileRead", 0)
	bad := Ctx{SetCurrent: cufiletest.SetCtxFunc(t, x.path), Ctx: 0xbad}
	if st := x.lib.Read(bad, h, x.addr(), []Req{ok}); st.Code != CodeContext || st.CUErr != 201 {
		t.Errorf("read with a context that cannot be made current: %+v", st)
	}
	if st := x.lib.BufRegister(Ctx{}, x.addr(), 4096); !st.OK() {
		t.Fatal(st)
	}
	if st := x.lib.Read(Ctx{}, h, x.addr(), []Req{{Off: 0, Dst: 4096, Len: 4096}}); st.Code != 5022 {
		t.Errorf("read outside the registered buffer: %+v, want 5022", st)
	}
}

// TestCloseWithoutV2 loads a library that exports only the unversioned
// cuFileDriverClose, as older GDS releases do.
func TestCloseWithoutV2(t *testing.T) {
	t.Parallel()
	x := setup(t, cufiletest.NoV2)
	if x.lib.Close != "cuFileDriverClose" {
		t.Errorf("close symbol %q, want cuFileDriverClose", x.lib.Close)
	}
	if st := x.lib.DriverOpen(Ctx{}); !st.OK() {
		t.Fatal(st)
	}
	if st := x.lib.DriverClose(); !st.OK() {
		t.Fatal(st)
	}
}

// TestWrite writes scattered ranges of the device buffer to a file and
// reads them back, then checks the write errors: a descriptor opened
// read-only (errno EBADF), an injected EIO, a cuFile code, a range
// outside the registered buffer; each names the request.
func TestWrite(t *testing.T) {
	t.Parallel()
	x := setup(t)
	copy(x.dev, x.data)
	if st := x.lib.DriverOpen(Ctx{}); !st.OK() {
		t.Fatal(st)
	}
	out, err := os.OpenFile(filepath.Join(t.TempDir(), "out"), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	h, st := x.lib.HandleRegister(int(out.Fd()))
	if !st.OK() {
		t.Fatal(st)
	}
	if st := x.lib.BufRegister(Ctx{}, x.addr(), 16<<10); !st.OK() {
		t.Fatal(st)
	}
	reqs := []Req{{Off: 40960, Dst: 0, Len: 4096}, {Off: 0, Dst: 8192, Len: 8192}}
	ctx := Ctx{SetCurrent: cufiletest.SetCtxFunc(t, x.path), Ctx: 0x1234}
	if st := x.lib.Write(ctx, h, x.addr(), reqs); !st.OK() {
		t.Fatal(st)
	}
	for _, r := range reqs {
		got := make([]byte, r.Len)
		if _, err := out.ReadAt(got, r.Off); err != nil || !bytes.Equal(got, x.dev[r.Dst:r.Dst+r.Len]) {
			t.Errorf("write %+v: file holds other bytes (%v)", r, err)
		}
	}
	if s := cufiletest.StateOf(t, x.path); s.Writes != 2 || s.Reads != 0 {
		t.Errorf("state %+v, want 2 writes", s)
	}
	ro, st := x.lib.HandleRegister(int(x.f.Fd()))
	if !st.OK() {
		t.Fatal(st)
	}
	ok := Req{Off: 0, Dst: 0, Len: 4096}
	if st := x.lib.Write(Ctx{}, ro, x.addr(), []Req{ok}); st.Op != "cuFileWrite" || st.Code != CodeErrno || syscall.Errno(st.Errno) != syscall.EBADF {
		t.Errorf("write to a read-only descriptor: %+v", st)
	}
	if st := x.lib.Write(Ctx{}, h, x.addr(), []Req{ok, {Off: 0, Dst: 12288, Len: 8192}}); st.Code != 5022 || st.Index != 1 {
		t.Errorf("write from outside the registered buffer: %+v, want 5022 at request 1", st)
	}
	cufiletest.Fail(t, x.path, "cuFileWrite", -1)
	if st := x.lib.Write(Ctx{}, h, x.addr(), []Req{ok}); st.Code != CodeErrno || syscall.Errno(st.Errno) != syscall.EIO {
		t.Errorf("write failing with errno: %+v", st)
	}
	cufiletest.Fail(t, x.path, "cuFileWrite", 5030)
	if st := x.lib.Write(Ctx{}, h, x.addr(), []Req{ok}); st.Code != 5030 || st.Op != "cuFileWrite" {
		t.Errorf("write failing with a cuFile code: %+v", st)
	}
}

// TestDriverProps reads cuFileDriverGetProperties: refused before the
// driver is open, then the nvidia-fs version the library reports (0.0:
// compatibility mode) and its flags, with the struct laid out as
// cufile.h has it.
func TestDriverProps(t *testing.T) {
	t.Parallel()
	x := setup(t)
	if _, st := x.lib.DriverProps(); st.Code != DriverNotInitialized {
		t.Errorf("before DriverOpen: %+v, want %d", st, DriverNotInitialized)
	}
	if st := x.lib.DriverOpen(Ctx{}); !st.OK() {
		t.Fatalf("DriverOpen: %+v", st)
	}
	t.Cleanup(func() { x.lib.DriverClose() })
	for _, v := range []struct{ major, minor uint32 }{{0, 0}, {2, 17}} {
		cufiletest.NVFS(t, x.path, uint(v.major), uint(v.minor))
		p, st := x.lib.DriverProps()
		if !st.OK() {
			t.Fatalf("DriverProps: %+v", st)
		}
		if p.Major != v.major || p.Minor != v.minor || p.Control&AllowCompat == 0 || p.Status != 1<<4 {
			t.Errorf("nvfs %d.%d: props %+v", v.major, v.minor, p)
		}
	}
}
