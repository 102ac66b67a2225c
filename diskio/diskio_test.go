package diskio

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/kvtier/kvtier/diskio/disktest"
	"github.com/kvtier/kvtier/kv"
	"github.com/kvtier/kvtier/pattern"
)

const seed = 42

func buffer(t *testing.T, n int) []byte { return disktest.Buffer(t, n) }

// patternFile writes a pattern file of size bytes in a new directory.
func patternFile(t *testing.T, size int64) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "kv")
	if err := Write(context.Background(), path, size, seed); err != nil {
		t.Fatal(err)
	}
	return path
}

// openFile opens path, direct or through the page cache, failing the
// test on an error; the file is closed when the test ends.
func openFile(t *testing.T, path string, direct bool) *File {
	t.Helper()
	f, err := Open(path, direct)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// scattered returns n chunks of size bytes at random distinct places of
// a file of slots chunks, into random distinct places of a buffer of n.
func scattered(n, slots int, size int64) []kv.Copy {
	rng := rand.New(rand.NewPCG(7, uint64(n)))
	src, dst := rng.Perm(slots)[:n], rng.Perm(n)
	plan := make([]kv.Copy, n)
	for i := range plan {
		plan[i] = kv.Copy{Src: int64(src[i]) * size, Dst: int64(dst[i]) * size, Bytes: size}
	}
	return plan
}

func reader(t *testing.T, mode string, depth int, dst []byte) Reader {
	t.Helper()
	r, err := NewReader(mode, depth, dst)
	if errors.Is(err, ErrRefused) {
		t.Skipf("io_uring refused here: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

// TestReadersAgree reads the same scattered plan with io_uring and with
// pread, direct and through the page cache, and checks every chunk
// against the pattern at its file offset.
func TestReadersAgree(t *testing.T) {
	t.Parallel()
	const chunk, n, slots = 16 << 10, 200, 260
	path := patternFile(t, slots*chunk)
	plan := scattered(n, slots, chunk)
	for _, tc := range []struct {
		mode   string
		depth  int
		direct bool
	}{{Uring, 32, true}, {Uring, 1, true}, {Uring, 8, false}, {Pread, 1, true}, {Pread, 1, false}} {
		t.Run(tc.mode, func(t *testing.T) {
			t.Parallel()
			f := openFile(t, path, tc.direct)
			dst := buffer(t, n*chunk)
			r := reader(t, tc.mode, tc.depth, dst)
			if tc.mode == Uring && !r.Fixed() {
				t.Errorf("ring reader did not register its buffer")
			}
			if err := r.Read(context.Background(), f, plan); err != nil {
				t.Fatal(err)
			}
			for i, c := range plan {
				if err := pattern.Check(dst[c.Dst:c.Dst+c.Bytes], seed, c.Src); err != nil {
					t.Fatalf("chunk %d: %v", i, err)
				}
			}
		})
	}
}

// TestRingSplitsAtRegisteredBuffers reads chunks that cross the ends of
// registered buffers (1 GiB in use, 64 KiB here), which the ring must
// split, each part into its own buffer.
func TestRingSplitsAtRegisteredBuffers(t *testing.T) {
	t.Parallel()
	const region, chunk = 64 << 10, 24 << 10
	path := patternFile(t, 1<<20)
	f := openFile(t, path, true)
	dst := buffer(t, 4*region)
	r, err := newRingReader(4, dst, region)
	if errors.Is(err, ErrRefused) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if !r.Fixed() {
		t.Fatal("buffers not registered")
	}
	var plan []kv.Copy
	for i := int64(0); (i+1)*chunk <= 4*region; i++ {
		plan = append(plan, kv.Copy{Src: (30 - i) * chunk, Dst: i * chunk, Bytes: chunk})
	}
	if err := r.Read(context.Background(), f, plan); err != nil {
		t.Fatal(err)
	}
	if len(r.reqs) <= len(plan) {
		t.Errorf("%d requests for %d chunks: none split", len(r.reqs), len(plan))
	}
	for i, c := range plan {
		if err := pattern.Check(dst[c.Dst:c.Dst+c.Bytes], seed, c.Src); err != nil {
			t.Fatalf("chunk %d: %v", i, err)
		}
	}
}

// TestWriteExtends checks that Write keeps what is there and extends it.
func TestWriteExtends(t *testing.T) {
	t.Parallel()
	const piece = 64 << 10
	path := filepath.Join(t.TempDir(), "kv")
	// A first piece of another seed stays: Write extends, it does not
	// rewrite whole pieces already there.
	if err := write(context.Background(), path, piece+100, seed+1, piece); err != nil {
		t.Fatal(err)
	}
	if err := write(context.Background(), path, 5*piece+4096, seed, piece); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) != 5*piece+4096 {
		t.Fatalf("file is %d bytes", len(b))
	}
	if err := pattern.Check(b[:piece], seed+1, 0); err != nil {
		t.Errorf("first piece rewritten: %v", err)
	}
	if err := pattern.Check(b[piece:], seed, piece); err != nil {
		t.Error(err)
	}
}

// TestFileChanged checks that Check and the readers notice a file
// truncated or removed between reads.
func TestFileChanged(t *testing.T) {
	t.Parallel()
	const chunk = 4096
	for _, change := range []string{"truncate", "remove", "replace"} {
		t.Run(change, func(t *testing.T) {
			t.Parallel()
			path := patternFile(t, 64*chunk)
			f := openFile(t, path, true)
			if err := f.Check(64 * chunk); err != nil {
				t.Fatalf("fresh file: %v", err)
			}
			var err error
			switch change {
			case "truncate":
				err = os.Truncate(path, 10*chunk)
			case "remove":
				err = os.Remove(path)
			case "replace":
				if err = os.Remove(path); err == nil {
					err = Write(context.Background(), path, 64*chunk, seed)
				}
			}
			if err != nil {
				t.Fatal(err)
			}
			want := map[string]string{"truncate": "truncated to 40960 bytes", "remove": "removed", "replace": "removed"}[change]
			if err := f.Check(64 * chunk); err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("Check: %v, want %q", err, want)
			}
			if change != "truncate" {
				return
			}
			plan := []kv.Copy{{Src: 0, Dst: 0, Bytes: chunk}, {Src: 20 * chunk, Dst: chunk, Bytes: chunk}}
			for _, mode := range []string{Uring, Pread} {
				r := reader(t, mode, 4, buffer(t, 2*chunk))
				err := r.Read(context.Background(), f, plan)
				if err == nil || !strings.Contains(err.Error(), "at offset 81920") || !strings.Contains(err.Error(), "shorter than expected") {
					t.Errorf("%s read of a truncated file: %v", mode, err)
				}
			}
		})
	}
}

func TestDropCache(t *testing.T) {
	t.Parallel()
	path := patternFile(t, 8<<20)
	f := openFile(t, path, false)
	dst := buffer(t, 8<<20)
	r := reader(t, Pread, 1, dst)
	if err := r.Read(context.Background(), f, []kv.Copy{{Bytes: 8 << 20}}); err != nil {
		t.Fatal(err)
	}
	if disktest.Resident(t, path) == 0 {
		t.Skip("a buffered read left no pages cached here; cannot tell a drop from no cache")
	}
	// Readahead the buffered read started can land a few pages after a
	// drop; what must hold is that dropping again leaves none, so a drop
	// that does nothing still fails all three tries.
	var n int
	for try := 0; try < 3; try++ {
		if err := f.DropCache(); err != nil {
			t.Fatal(err)
		}
		if n = disktest.Resident(t, path); n == 0 {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Errorf("%d pages still cached after DropCache three times", n)
}

func TestBadPlans(t *testing.T) {
	t.Parallel()
	path := patternFile(t, 1<<20)
	f := openFile(t, path, false)
	for _, mode := range []string{Uring, Pread} {
		r := reader(t, mode, 2, buffer(t, 8192))
		for _, c := range []kv.Copy{{Dst: 4096, Bytes: 8192}, {Dst: -1, Bytes: 10}, {Bytes: 0}} {
			if err := r.Read(context.Background(), f, []kv.Copy{c}); err == nil {
				t.Errorf("%s: read %+v succeeded", mode, c)
			}
		}
	}
	if _, err := NewReader("aio", 1, nil); err == nil {
		t.Error("unknown mode accepted")
	}
	if _, err := NewReader(Uring, 0, nil); err == nil {
		t.Error("depth 0 accepted")
	}
}

// TestWriteFillsDisk writes more than a small ext4 holds: the error says
// the filesystem is full.
func TestWriteFillsDisk(t *testing.T) {
	dir := disktest.LoopExt4(t, 16<<20)
	err := Write(context.Background(), filepath.Join(dir, "kv"), 64<<20, seed)
	if !errors.Is(err, ErrNoSpace) {
		t.Fatalf("Write on a full disk: %v, want ErrNoSpace", err)
	}
}

func TestStatFS(t *testing.T) {
	t.Parallel()
	fs, err := StatFS(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if fs.Free <= 0 || fs.Block <= 0 || fs.Type == "" {
		t.Errorf("StatFS: %+v", fs)
	}
	if _, err := StatFS(filepath.Join(t.TempDir(), "missing")); err == nil {
		t.Error("StatFS of a missing directory succeeded")
	}
	for _, tc := range []struct {
		magic  int64
		name   string
		memory bool
	}{{0xef53, "ext4", false}, {0x01021994, "tmpfs", true}, {0x858458f6, "ramfs", true}, {0x58465342, "xfs", false}, {0x1234, "0x1234", false}} {
		fs := fsOf(tc.magic, 1, 1)
		if fs.Type != tc.name || fs.Memory != tc.memory || (fs.MemoryReason("/d") != "") != tc.memory {
			t.Errorf("fsOf(%#x) = %+v, want %s memory=%v", tc.magic, fs, tc.name, tc.memory)
		}
	}
}

func TestTmpfsIsMemory(t *testing.T) {
	dir := disktest.Tmpfs(t, 1<<20)
	fs, err := StatFS(dir)
	if err != nil {
		t.Fatal(err)
	}
	if r := fs.MemoryReason(dir); !strings.Contains(r, "tmpfs") || !strings.Contains(r, "not a disk") {
		t.Errorf("tmpfs reason %q", r)
	}
}

// TestHugePages checks that memory HugePages accepts is backed by huge
// pages (AnonHugePages of its mapping in /proc/self/smaps).
func TestHugePages(t *testing.T) {
	t.Parallel()
	b := buffer(t, 8<<20)
	for i := 0; i < len(b); i += 4096 {
		b[i] = 1
	}
	if err := HugePages(b); err != nil {
		t.Skipf("the kernel declined huge pages here: %v", err)
	}
	smaps, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		t.Skip(err)
	}
	start := fmt.Sprintf("%x-", uintptr(unsafe.Pointer(&b[0])))
	var huge int
	in := false
	for l := range strings.SplitSeq(string(smaps), "\n") {
		if f := strings.Fields(l); len(f) > 0 && strings.Contains(f[0], "-") && !strings.HasSuffix(f[0], ":") {
			in = strings.HasPrefix(l, start)
		}
		if in && strings.HasPrefix(l, "AnonHugePages:") {
			fmt.Sscanf(strings.TrimPrefix(l, "AnonHugePages:"), "%d", &huge)
		}
	}
	if huge < 2048 {
		t.Errorf("HugePages succeeded but the mapping has %d kB of huge pages", huge)
	}
}
