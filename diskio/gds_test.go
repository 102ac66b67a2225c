package diskio

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"unsafe"

	"github.com/kvtier/kvtier/csrc/cufilewrap"
	"github.com/kvtier/kvtier/csrc/cufilewrap/cufiletest"
	"github.com/kvtier/kvtier/kv"
	"github.com/kvtier/kvtier/pattern"
)

// TestGDSReads reads a scattered plan with cuFile (the fake libcufile,
// into host memory standing in for the device) at several depths and
// checks every chunk; closing undoes every registration.
func TestGDSReads(t *testing.T) {
	t.Parallel()
	const chunk, n, slots = 16 << 10, 100, 130
	path := patternFile(t, slots*chunk)
	plan := scattered(n, slots, chunk)
	for _, depth := range []int{1, 4, 200} {
		lib := cufiletest.Build(t)
		dev := buffer(t, n*chunk)
		g, err := OpenGDS(lib, DeviceContext{}, uintptr(unsafe.Pointer(&dev[0])), int64(len(dev)), depth)
		if err != nil {
			t.Fatal(err)
		}
		f, err := Open(path, true)
		if err != nil {
			t.Fatal(err)
		}
		for range 2 {
			if err := g.Read(context.Background(), f, plan); err != nil {
				t.Fatal(err)
			}
		}
		for i, c := range plan {
			if err := pattern.Check(dev[c.Dst:c.Dst+c.Bytes], seed, c.Src); err != nil {
				t.Fatalf("depth %d chunk %d: %v", depth, i, err)
			}
		}
		if s := cufiletest.StateOf(t, lib); s.Handles != 1 || s.Buffers != 1 || s.Reads != 2*n {
			t.Errorf("depth %d: fake holds %+v, want one handle, one buffer, %d reads", depth, s, 2*n)
		}
		if err := g.Close(); err != nil {
			t.Fatal(err)
		}
		f.Close()
		if s := cufiletest.StateOf(t, lib); s.Open != 0 || s.Handles != 0 || s.Buffers != 0 {
			t.Errorf("depth %d: after Close the fake holds %+v", depth, s)
		}
	}
}

// TestGDSWrites writes a scattered plan from the device buffer (host
// memory under the fake libcufile) to a file at several depths and reads
// every chunk back; a file open for reading only fails the write with
// cuFileWrite's errno.
func TestGDSWrites(t *testing.T) {
	t.Parallel()
	const chunk, n, slots = 16 << 10, 60, 80
	path := patternFile(t, slots*chunk)
	var plan []kv.Copy // Src in the device buffer, Dst in the file
	for _, c := range scattered(n, slots, chunk) {
		plan = append(plan, kv.Copy{Src: c.Dst, Dst: c.Src, Bytes: c.Bytes})
	}
	for _, depth := range []int{1, 7} {
		lib := cufiletest.Build(t)
		dev := buffer(t, n*chunk)
		pattern.Fill(dev, uint64(seed+depth), 0)
		g, err := OpenGDS(lib, DeviceContext{}, uintptr(unsafe.Pointer(&dev[0])), int64(len(dev)), depth)
		if err != nil {
			t.Fatal(err)
		}
		f, err := OpenWrite(path, true)
		if err != nil {
			t.Fatal(err)
		}
		if err := g.Write(context.Background(), f, plan); err != nil {
			t.Fatal(err)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		for i, c := range plan {
			if err := pattern.Check(data[c.Dst:c.Dst+c.Bytes], uint64(seed+depth), c.Src); err != nil {
				t.Fatalf("depth %d chunk %d: %v", depth, i, err)
			}
		}
		if s := cufiletest.StateOf(t, lib); s.Writes != n || s.Reads != 0 {
			t.Errorf("depth %d: fake holds %+v, want %d writes", depth, s, n)
		}
		ro := openFile(t, path, true)
		if err := g.Write(context.Background(), ro, plan[:1]); err == nil || !strings.Contains(err.Error(), "cuFileWrite: bad file descriptor") {
			t.Errorf("depth %d: write to a read-only file: %v", depth, err)
		}
		g.Forget(ro)
		f.Close()
		if err := g.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestGDSFailures fails each cuFile call in turn and checks where the
// failure surfaces and that it names the call.
func TestGDSFailures(t *testing.T) {
	t.Parallel()
	const chunk = 4096
	path := patternFile(t, 64*chunk)
	plan := []kv.Copy{{Src: 0, Dst: 0, Bytes: chunk}, {Src: 8 * chunk, Dst: chunk, Bytes: chunk}}
	for _, tc := range []struct {
		sym  string
		code int
		at   string // open, read or close
		want string
	}{
		{"cuFileDriverOpen", 5001, "open", "cuFileDriverOpen: CU_FILE_DRIVER_NOT_INITIALIZED (5001)"},
		{"cuFileBufRegister", 5012, "open", "cuFileBufRegister: CU_FILE_CUDA_POINTER_INVALID (5012)"},
		{"cuFileHandleRegister", 5020, "read", "cuFileHandleRegister: CU_FILE_DIO_NOT_SET (5020)"},
		{"cuFileRead", -1, "read", "(4096 bytes): cuFileRead: input/output error"},
		{"cuFileRead", 5011, "read", "cuFileRead: CU_FILE_CUDA_DRIVER_ERROR (5011)"},
		{"cuFileBufDeregister", 5030, "close", "cuFileBufDeregister: CU_FILE_INTERNAL_ERROR (5030)"},
		{"cuFileDriverClose", 5030, "close", "cuFileDriverClose: CU_FILE_INTERNAL_ERROR (5030)"},
	} {
		t.Run(tc.sym, func(t *testing.T) {
			t.Parallel()
			lib := cufiletest.Build(t)
			dev := buffer(t, 2*chunk)
			addr := uintptr(unsafe.Pointer(&dev[0]))
			if tc.at == "open" {
				// Load the fake (and check it works) so its failure is set
				// before OpenGDS loads the same copy.
				if err := ProbeGDS(lib, DeviceContext{}); err != nil {
					t.Fatal(err)
				}
				cufiletest.Fail(t, lib, tc.sym, tc.code)
			}
			g, err := OpenGDS(lib, DeviceContext{}, addr, int64(len(dev)), 2)
			if tc.at == "open" {
				if err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("open: %v, want %q", err, tc.want)
				}
				if s := cufiletest.StateOf(t, lib); s.Open != 0 || s.Buffers != 0 {
					t.Errorf("a failed open left %+v", s)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			cufiletest.Fail(t, lib, tc.sym, tc.code)
			f, err := Open(path, true)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			err = g.Read(context.Background(), f, plan)
			if tc.at == "read" {
				if err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("read: %v, want %q", err, tc.want)
				}
			} else if err != nil {
				t.Fatal(err)
			}
			err = g.Close()
			if tc.at == "close" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
				t.Fatalf("close: %v, want %q", err, tc.want)
			}
		})
	}
}

func TestGDSTruncatedAndMissing(t *testing.T) {
	t.Parallel()
	const chunk = 4096
	path := patternFile(t, 16*chunk)
	lib := cufiletest.Build(t)
	dev := buffer(t, 2*chunk)
	g, err := OpenGDS(lib, DeviceContext{}, uintptr(unsafe.Pointer(&dev[0])), int64(len(dev)), 2)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	f, err := Open(path, true)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := os.Truncate(path, 4*chunk); err != nil {
		t.Fatal(err)
	}
	err = g.Read(context.Background(), f, []kv.Copy{{Src: 8 * chunk, Dst: 0, Bytes: chunk}})
	if err == nil || !strings.Contains(err.Error(), "shorter than expected") {
		t.Errorf("read past the end of a truncated file: %v", err)
	}
	err = g.Read(context.Background(), f, []kv.Copy{{Src: 0, Dst: chunk, Bytes: 2 * chunk}})
	if err == nil || !strings.Contains(err.Error(), "outside a device buffer") {
		t.Errorf("read outside the buffer: %v", err)
	}
	if err := ProbeGDS(t.TempDir()+"/libcufile.so.0", DeviceContext{}); err == nil || !strings.Contains(err.Error(), "cannot load libcufile") {
		t.Errorf("probe of a missing library: %v", err)
	}
}

// TestGDSMode: native only where the nvidia-fs module is loaded and
// cuFile's driver properties report it in use; the reason says which
// input decided.
func TestGDSMode(t *testing.T) {
	t.Parallel()
	lib := cufiletest.Build(t)
	dev := buffer(t, 4<<10)
	g, err := OpenGDS(lib, DeviceContext{}, uintptr(unsafe.Pointer(&dev[0])), int64(len(dev)), 1)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	if m, why := g.Mode(true); m != "compatibility" || !strings.Contains(why, "nvidia-fs 0.0") {
		t.Errorf("fake reporting no nvidia-fs, module loaded: %s (%s)", m, why)
	}
	in := cufilewrap.DriverProps{Major: 2, Minor: 17}
	for _, c := range []struct {
		module bool
		props  cufilewrap.DriverProps
		err    error
		want   string
		why    string
	}{
		{true, in, nil, "native", "nvidia-fs 2.17"},
		{false, in, nil, "compatibility", "/proc/driver/nvidia-fs is absent"},
		{true, cufilewrap.DriverProps{}, nil, "compatibility", "not in use"},
		{false, cufilewrap.DriverProps{}, nil, "compatibility", "no nvidia-fs module"},
		{true, in, errors.New("cuFileDriverGetProperties: unsupported"), "compatibility", "unread"},
	} {
		if m, why := GDSMode(c.module, c.props, c.err); m != c.want || !strings.Contains(why, c.why) {
			t.Errorf("module %v props %+v err %v: %s (%s), want %s (%s)", c.module, c.props, c.err, m, why, c.want, c.why)
		}
	}
}
