// Package fakelib compiles the fake native libraries kvtier's tests load
// in place of libcuda, libcublas, libcufile and libibverbs, with the
// system C compiler. A set of libraries is compiled once per compiler,
// sources and flags into a cache directory under os.TempDir and copied
// from there into a fresh directory for each test, so that every test
// dlopens its own instances and what one test asks of a fake does not
// leak into another.
package fakelib

import (
	"crypto/sha256"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// A Lib is one library of a set.
type Lib struct {
	Name   string   // file name, e.g. "libcuda.so.1"
	Source []byte   // C source
	Flags  []string // extra compiler and linker flags
	// Files are written beside the source before compiling, by name
	// (e.g. a linker version script the flags refer to as such).
	Files map[string][]byte
}

// Build compiles libs (once, cached) and returns the directory of a
// fresh copy of them in t's temporary directory. The test is skipped
// when there is no C compiler ($CC, else cc).
func Build(t testing.TB, libs ...Lib) string {
	t.Helper()
	cc := os.Getenv("CC")
	if cc == "" {
		cc = "cc"
	}
	if _, err := exec.LookPath(cc); err != nil {
		t.Skipf("fakelib: no C compiler (%s) to build the fake libraries", cc)
	}
	h := sha256.New()
	fmt.Fprintln(h, cc)
	for _, l := range libs {
		fmt.Fprintln(h, l.Name, l.Flags, len(l.Source))
		h.Write(l.Source)
		for n, b := range l.Files {
			fmt.Fprintln(h, n)
			h.Write(b)
		}
	}
	cache := filepath.Join(os.TempDir(), fmt.Sprintf("kvtier-fakelib-%x", h.Sum(nil)[:8]))
	if _, err := os.Stat(filepath.Join(cache, libs[len(libs)-1].Name)); err != nil {
		compile(t, cc, cache, libs)
	}
	dst := t.TempDir()
	for _, l := range libs {
		b, err := os.ReadFile(filepath.Join(cache, l.Name))
		if err == nil {
			err = os.WriteFile(filepath.Join(dst, l.Name), b, 0o755)
		}
		if err != nil {
			t.Fatalf("fakelib: %v", err)
		}
	}
	return dst
}

// compile builds every library into a new directory and moves it to
// cache; another test process that won the race leaves an equal copy.
func compile(t testing.TB, cc, cache string, libs []Lib) {
	tmp, err := os.MkdirTemp(os.TempDir(), "kvtier-fakelib-build-")
	if err != nil {
		t.Fatalf("fakelib: %v", err)
	}
	defer os.RemoveAll(tmp)
	for _, l := range libs {
		src := filepath.Join(tmp, l.Name+".c")
		files := map[string][]byte{src: l.Source}
		for n, b := range l.Files {
			files[filepath.Join(tmp, n)] = b
		}
		for p, b := range files {
			if err := os.WriteFile(p, b, 0o644); err != nil {
				t.Fatalf("fakelib: %v", err)
			}
		}
		args := append([]string{"-shared", "-fPIC", "-O1", "-Wall", "-o", filepath.Join(tmp, l.Name)}, l.Flags...)
		args = append(args, src, "-ldl", "-lpthread")
		cmd := exec.Command(cc, args...)
		cmd.Dir = tmp
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("fakelib: %s %v: %v\n%s", cc, args, err, b)
		}
	}
	if err := os.Rename(tmp, cache); err != nil {
		if _, serr := os.Stat(filepath.Join(cache, libs[len(libs)-1].Name)); serr != nil {
			t.Fatalf("fakelib: %v", err)
		}
	}
}
