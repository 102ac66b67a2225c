package csrc_test

import (
	"bytes"
	"debug/elf"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	// Every shim and go-nvml, so this test binary links them all.
	_ "github.com/NVIDIA/go-nvml/pkg/nvml"
	_ "github.com/kvtier/kvtier/csrc/cublaswrap"
	_ "github.com/kvtier/kvtier/csrc/cudawrap"
	_ "github.com/kvtier/kvtier/csrc/cufilewrap"
	_ "github.com/kvtier/kvtier/csrc/ibvwrap"
	_ "github.com/kvtier/kvtier/csrc/uring"
)

// unresolved lists the undefined symbols of the ELF binary at path that
// no shared library it needs was found to define at link time (no
// version, no library), but NVML's: go-nvml's link flags
// (-Wl,--unresolved-symbols=ignore-in-object-files) let those through
// for the whole binary, to be bound when it dlopens libnvidia-ml. Weak
// references (__gmon_start__) may stay undefined.
func unresolved(t *testing.T, path string) []string {
	t.Helper()
	f, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	syms, err := f.DynamicSymbols()
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	var out []string
	for _, s := range syms {
		if s.Section == elf.SHN_UNDEF && elf.ST_BIND(s.Info) == elf.STB_GLOBAL && s.Library == "" && s.Version == "" &&
			!strings.HasPrefix(s.Name, "nvml") {
			out = append(out, s.Name)
		}
	}
	slices.Sort(out)
	return out
}

// TestUnresolvedSymbols: go-nvml links every binary with
// --unresolved-symbols=ignore-in-object-files, so a shim calling a C
// function nothing defines links anyway and fails only when the call is
// made ("symbol lookup error"). This test is where such a mistake fails
// now: this test binary links every shim beside go-nvml and must have
// no unresolved symbol but NVML's; and a program made with that mistake
// (testdata/missingsym) links, is caught by the same check, and dies at
// its call.
func TestUnresolvedSymbols(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if u := unresolved(t, self); len(u) > 0 {
		t.Errorf("the shims call C functions nothing defines: %s", strings.Join(u, ", "))
	}
	if testing.Short() {
		t.Skip("builds testdata/missingsym")
	}
	goCmd, err := exec.LookPath("go")
	if err != nil {
		t.Skip("the go command is not on PATH")
	}
	bin := filepath.Join(t.TempDir(), "missingsym")
	cmd := exec.Command(goCmd, "build", "-o", bin, "./testdata/missingsym")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build ./testdata/missingsym: %v\n%s", err, out)
	}
	if u := unresolved(t, bin); !slices.Equal(u, []string{"kv_missing"}) {
		t.Errorf("unresolved symbols of missingsym: %q, want kv_missing", u)
	}
	var out bytes.Buffer
	run := exec.Command(bin)
	run.Stdout, run.Stderr = &out, &out
	run.WaitDelay = time.Second
	if err := run.Run(); err == nil || !strings.Contains(out.String(), "kv_missing") {
		t.Errorf("missingsym ran: %v\n%s", err, out.String())
	}
}

// TestNVMLBuildsQuiet compiles go-nvml's C as a build on a cold cache
// does and fails on any compiler warning: go-nvml from v0.13 includes an
// nvml.h that marks functions deprecated which its own wrappers call
// (about 120 warning lines). A cold GOCACHE rebuilds the standard library
// too (minutes on 2 cores); a CGO_CFLAGS define no code reads gives every
// cgo package a new cache key instead, so go-nvml's C is compiled again
// with the flags a build uses, and only the cgo packages are rebuilt.
func TestNVMLBuildsQuiet(t *testing.T) {
	if testing.Short() {
		t.Skip("compiles go-nvml")
	}
	goCmd, err := exec.LookPath("go")
	if err != nil {
		t.Skip("the go command is not on PATH")
	}
	flags, err := exec.Command(goCmd, "env", "CGO_CFLAGS").Output()
	if err != nil {
		t.Fatal(err)
	}
	cflags := fmt.Sprintf("%s -DKVTIER_COLD_BUILD=%d", strings.TrimSpace(string(flags)), time.Now().UnixNano())
	cmd := exec.Command(goCmd, "build", "-x", "github.com/NVIDIA/go-nvml/pkg/nvml")
	cmd.Env = append(os.Environ(), "CGO_CFLAGS="+cflags)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go build go-nvml: %v\n%s", err, out)
	}
	if !bytes.Contains(out, []byte("KVTIER_COLD_BUILD")) || !bytes.Contains(out, []byte("nvml.cgo2.c")) {
		t.Fatalf("go-nvml's C was not compiled again:\n%s", out)
	}
	for l := range strings.Lines(string(out)) {
		if strings.Contains(l, "warning:") {
			t.Errorf("building go-nvml: %s", strings.TrimSpace(l))
		}
	}
}
