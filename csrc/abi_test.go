package csrc_test

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// compile builds C program src (in testdata) with the shims' directory on
// the include path and returns the binary; the test is skipped without a
// C compiler.
func compile(t *testing.T, src string, flags ...string) string {
	t.Helper()
	cc, err := exec.LookPath("gcc")
	if err != nil {
		t.Skip("no gcc to compile the ABI facts programs")
	}
	bin := filepath.Join(t.TempDir(), strings.TrimSuffix(src, ".c"))
	args := append([]string{"-Wall", "-Werror", "-I", ".", "-o", bin, filepath.Join("testdata", src)}, flags...)
	args = append(args, "-ldl")
	if out, err := exec.Command(cc, args...).CombinedOutput(); err != nil {
		t.Fatalf("%s %s: %v\n%s", cc, strings.Join(args, " "), err, out)
	}
	return bin
}

func output(t *testing.T, bin string, args ...string) []string {
	t.Helper()
	out, err := exec.Command(bin, args...).Output()
	if err != nil {
		t.Fatalf("%s: %v", bin, err)
	}
	return strings.Split(strings.TrimSpace(string(out)), "\n")
}

// golden reads testdata/NAME (cuda-abi.golden, cufile-abi.golden): each
// fact line by CUDA version.
func golden(t *testing.T, name string) map[string][]string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	g := map[string][]string{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		l := sc.Text()
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		v, fact, _ := strings.Cut(l, " ")
		g[v] = append(g[v], fact)
	}
	return g
}

// TestCUDAABIGolden compiles a program over the CUDA shims' lists and
// compares what it prints (every symbol's ABI version and parameters,
// struct sizes and offsets, constants) with the facts NVIDIA's headers
// state for CUDA 12.8, 12.9 and 13.0 (testdata/cuda-abi.golden, written
// by internal/abigen). A driver symbol must be declared at exactly the
// shim's ABI version by at least one of them, with the same parameters
// wherever it is declared; everything else must match in all three.
func TestCUDAABIGolden(t *testing.T) {
	shim := output(t, compile(t, "cudafacts.c"))
	g := golden(t, "cuda-abi.golden")
	versions := []string{"12080", "12090", "13000"}
	for _, v := range versions {
		if len(g[v]) == 0 {
			t.Fatalf("the golden has no facts for CUDA %s", v)
		}
	}
	for _, fact := range shim {
		f := strings.Fields(fact)
		switch f[0] {
		case "pfn":
			checkPFN(t, g, versions, f)
		default:
			for _, v := range versions {
				if !hasFact(g[v], fact) {
					t.Errorf("shim: %s; CUDA %s headers: %s", fact, v, near(g[v], f[0]+" "+f[1]+" "))
				}
			}
		}
	}
}

// TestCUFileABIGolden compiles a program over the cuFile shim's lists and
// compares what it prints (each symbol by the exported name it looks up,
// with its parameter classes and return type; struct sizes and offsets;
// constants) with the facts of NVIDIA's cufile.h for CUDA 12.8, 12.9 and
// 13.0 (testdata/cufile-abi.golden, written by internal/abigen -cufile):
// every fact must hold in all three.
func TestCUFileABIGolden(t *testing.T) {
	shim := output(t, compile(t, "cufilefacts.c"))
	g := golden(t, "cufile-abi.golden")
	for _, v := range []string{"12080", "12090", "13000"} {
		if len(g[v]) == 0 {
			t.Fatalf("the golden has no facts for CUDA %s", v)
		}
		for _, fact := range shim {
			f := strings.Fields(fact)
			if !hasFact(g[v], fact) {
				t.Errorf("shim: %s; CUDA %s cufile.h: %s", fact, v, near(g[v], f[0]+" "+f[1]+" "))
			}
		}
	}
}

// checkPFN checks one "pfn NAME ABI N CLASSES..." fact of the shim.
func checkPFN(t *testing.T, g map[string][]string, versions []string, f []string) {
	t.Helper()
	name, abi, params := f[1], f[2], strings.Join(f[3:], " ")
	declared := 0
	for _, v := range versions {
		for _, gf := range g[v] {
			x := strings.Fields(gf)
			if x[0] != "pfn" || x[1] != name || x[2] != abi {
				continue
			}
			declared++
			if got := strings.Join(x[4:], " "); got != params {
				t.Errorf("%s at ABI %s: the shim declares (%s), CUDA %s headers %s (%s)", name, abi, params, v, x[3], got)
			}
		}
	}
	if declared == 0 {
		t.Errorf("%s: no CUDA header declares it at ABI %s (the shim's version); they declare: %s",
			name, abi, near(g[versions[len(versions)-1]], "pfn "+name+" "))
	}
}

func hasFact(facts []string, fact string) bool {
	return slices.Contains(facts, fact)
}

// near lists the facts that start with prefix, for an error message.
func near(facts []string, prefix string) string {
	var out []string
	for _, f := range facts {
		if strings.HasPrefix(f, prefix) {
			out = append(out, f)
		}
	}
	if len(out) == 0 {
		return "nothing"
	}
	return strings.Join(out, "; ")
}

// TestVerbsABI compiles the same lists of sizes, offsets and constants
// over the verbs shim's ibvcore.h and over rdma-core's verbs.h (Debian's
// libibverbs-dev) and requires the same output; the verbs.h build also
// fails if a symbol's prototype in the shim's list is not verbs.h's, and
// the system's libibverbs.so.1, where present, must export every symbol
// at the version the shim asks for.
func TestVerbsABI(t *testing.T) {
	if _, err := os.Stat("/usr/include/infiniband/verbs.h"); err != nil {
		t.Skip("no /usr/include/infiniband/verbs.h (libibverbs-dev) to compare with")
	}
	shim := output(t, compile(t, "ibvfacts.c"))
	realBin := compile(t, "ibvfacts.c", "-DKVT_REAL_VERBS")
	real := output(t, realBin)
	if len(shim) != len(real) {
		t.Fatalf("%d facts from ibvcore.h, %d from verbs.h", len(shim), len(real))
	}
	for i := range shim {
		if shim[i] != real[i] {
			t.Errorf("ibvcore.h: %s; verbs.h: %s", shim[i], real[i])
		}
	}
	out, err := exec.Command(realBin, "dlvsym").Output()
	if strings.TrimSpace(string(out)) == "nolib" {
		t.Log("no libibverbs.so.1 here: symbol versions not checked")
		return
	}
	if err != nil {
		t.Errorf("libibverbs.so.1 lacks symbols at the shim's versions:\n%s", out)
	}
}
