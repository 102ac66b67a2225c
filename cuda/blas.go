package cuda

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"unsafe"

	"github.com/kvtier/kvtier/csrc/cublaswrap"
	"github.com/kvtier/kvtier/csrc/shim"
)

// BLAS is a loaded libcublas.
type BLAS struct {
	b    *cublaswrap.Lib
	Path string
}

// BLASNames lists the libcublas sonames OpenBLAS tries for a driver of
// CUDA version driverVersion: the driver's major first, then older majors
// down to 11. A cuBLAS newer than the driver cannot create a handle (its
// runtime needs a driver of at least its own major), so newer majors come
// only where the driver's version is unknown (0): 13, 12, 11.
func BLASNames(driverVersion int) []string {
	major := driverVersion / 1000
	if major < 11 {
		major = 0
	}
	var names []string
	if major == 0 {
		for m := 13; m >= 11; m-- {
			names = append(names, fmt.Sprintf("libcublas.so.%d", m))
		}
		return names
	}
	for m := major; m >= 11; m-- {
		names = append(names, fmt.Sprintf("libcublas.so.%d", m))
	}
	return names
}

// BLASDirs returns the directories OpenBLAS looks in after the sonames
// (pip's cuBLAS wheels: site-packages/nvidia/cublas/lib and
// nvidia/cu13/lib), or why there are none. It is called only when no
// soname loads.
type BLASDirs func() ([]string, error)

// OpenBLAS returns cuBLAS for a driver of CUDA version driverVersion:
// the library at path when path is not "", else the first of
// BLASNames(driverVersion) that loads, else the first of those names
// found in one of dirs (nil: none), loaded after the libcublasLt beside
// it. The error lists every place tried. Each path is loaded once for
// the life of the process; later calls return the same library or error.
func OpenBLAS(path string, driverVersion int, dirs BLASDirs) (*BLAS, error) {
	if path != "" {
		b, err := openBLAS(path)
		if err != nil {
			return nil, &Error{Op: "dlopen", Code: shim.CodeNoLibrary, Msg: fmt.Sprintf("cannot load libcublas (tried %v)", err)}
		}
		return b, nil
	}
	names := BLASNames(driverVersion)
	var t blasTried
	for _, n := range names {
		b, err := openBLAS(n)
		if err == nil {
			return b, nil
		}
		t.soname(n, err)
	}
	if dirs != nil {
		ds, err := dirs()
		if err != nil {
			t.other = append(t.other, "pip's site-packages: "+err.Error())
		}
		for _, d := range ds {
			b, err := openBLASIn(d, names)
			if err == nil {
				return b, nil
			}
			t.dir(d, err)
		}
	}
	msg := fmt.Sprintf("cannot load libcublas (tried %s)", t.String(names))
	if driverVersion > 0 {
		msg = fmt.Sprintf("cannot load libcublas for driver CUDA %s (tried %s)", FormatVersion(driverVersion), t.String(names))
	}
	return nil, &Error{Op: "dlopen", Code: shim.CodeNoLibrary, Msg: msg}
}

// blasTried is what OpenBLAS tried, said once per kind of failure: the
// sonames the loader does not find, the directories that hold none of
// them, and every other error as it is.
type blasTried struct {
	absent, emptyDirs, other []string
}

// errNoBLASIn is openBLASIn's error for a directory holding none of the
// names.
var errNoBLASIn = errors.New("no libcublas")

func (t *blasTried) soname(n string, err error) {
	if strings.Contains(err.Error(), "cannot open shared object file") {
		t.absent = append(t.absent, n)
		return
	}
	t.other = append(t.other, err.Error())
}

func (t *blasTried) dir(d string, err error) {
	if errors.Is(err, errNoBLASIn) {
		t.emptyDirs = append(t.emptyDirs, d)
		return
	}
	t.other = append(t.other, err.Error())
}

// String says it in one short line: "libcublas.so.13, libcublas.so.12:
// not found by the loader; none of them in DIR, DIR; OTHER".
func (t *blasTried) String(names []string) string {
	var parts []string
	if len(t.absent) > 0 {
		parts = append(parts, strings.Join(t.absent, ", ")+": not found by the loader")
	}
	if len(t.emptyDirs) > 0 {
		what := "none of them"
		if len(t.absent) == 0 {
			what = "no " + strings.Join(names, " or ")
		}
		parts = append(parts, what+" in "+strings.Join(t.emptyDirs, ", "))
	}
	return strings.Join(append(parts, t.other...), "; ")
}

// openBLASIn loads the first of names that dir holds, after the
// libcublasLt of the same major beside it (libcublas needs it, and dir is
// not on the loader's path).
func openBLASIn(dir string, names []string) (*BLAS, error) {
	for _, n := range names {
		p := filepath.Join(dir, n)
		if _, err := os.Stat(p); err != nil {
			continue
		}
		lt := filepath.Join(dir, strings.Replace(n, "libcublas.", "libcublasLt.", 1))
		if _, err := os.Stat(lt); err == nil {
			if st := cublaswrap.Preload(lt); !st.OK() {
				return nil, fmt.Errorf("%s: %s", lt, st.Msg)
			}
		}
		return openBLAS(p)
	}
	return nil, fmt.Errorf("%s: %w of %s", dir, errNoBLASIn, strings.Join(names, ", "))
}

// openBLAS loads one path once; the error names the path and why.
func openBLAS(path string) (*BLAS, error) {
	return blas.Load(path, func(path string) (*BLAS, error) {
		b, st := cublaswrap.Load(path)
		switch {
		case st.OK():
			return &BLAS{b: b, Path: b.Path}, nil
		case st.Code == shim.CodeNoSymbol:
			return nil, fmt.Errorf("%s", st.Msg)
		}
		return nil, fmt.Errorf("%s: %s", path, st.Msg)
	})
}

func (b *BLAS) err(st cublaswrap.Status, d *Driver) error {
	if st.OK() {
		return nil
	}
	err := &Error{Op: st.Op, Code: st.Code, Msg: st.Msg}
	if st.Op == "cuCtxSetCurrent" {
		err.Name, err.Msg = d.l.ErrorName(st.Code)
	} else {
		err.Name = b.b.StatusName(st.Code)
	}
	return err
}

// A Handle is a cuBLAS handle of one context, bound to a stream. Every
// call through it makes that context current in the same C call.
type Handle struct {
	b       *BLAS
	s       *Stream
	h       *cublaswrap.Handle
	Version int // cublasGetVersion, e.g. 120900
}

// NewHandle creates a cuBLAS handle on s's context that issues its work
// on s.
func (b *BLAS) NewHandle(s *Stream) (*Handle, error) {
	c := s.c
	h, v, st := b.b.Create(c.d.l.SetCtxFunc(), unsafe.Pointer(c.ctx), unsafe.Pointer(s.h))
	if err := b.err(st, c.d); err != nil {
		return nil, err
	}
	return &Handle{b: b, s: s, h: h, Version: v}, nil
}

// Destroy releases the handle.
func (h *Handle) Destroy() error {
	x, ok := take(&h.h)
	if !ok {
		return nil
	}
	return h.b.err(h.b.b.Destroy(x), h.s.c.d)
}

// A Gemm is C[M×N] = A[M×K]·B[K×N] in row-major bf16 with fp32
// accumulation, Batch times over consecutive matrices (strided batch);
// A, B and C are device pointers.
type Gemm = cublaswrap.Gemm

// Gemms issues ops on the handle's stream in one cgo call and returns
// how many were issued before an error.
func (h *Handle) Gemms(ops []Gemm) (int, error) {
	if len(ops) == 0 {
		return 0, nil
	}
	for _, g := range ops {
		if g.M <= 0 || g.N <= 0 || g.K <= 0 {
			return 0, fmt.Errorf("cuda: gemm %dx%dx%d", g.M, g.N, g.K)
		}
	}
	done, st, err := h.b.b.Gemms(h.h, ops)
	if err != nil {
		return 0, err
	}
	if err := h.b.err(st, h.s.c.d); err != nil {
		return done, fmt.Errorf("gemm %d of %d: %w", done, len(ops), err)
	}
	return len(ops), nil
}
