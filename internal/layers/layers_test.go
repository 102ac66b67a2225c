package layers

import (
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/kvtier/kvtier/"

// deps lists the packages pkg depends on (itself included), each with
// its number of cgo files, as built with env.
func deps(t *testing.T, pkg string, env ...string) map[string]string {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("no go command: %v", err)
	}
	cmd := exec.Command(goBin, "list", "-deps", "-f", "{{.ImportPath}} {{len .CgoFiles}}", module+pkg)
	cmd.Env = append(cmd.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go list %s: %v\n%s", pkg, err, out)
	}
	m := map[string]string{}
	for line := range strings.SplitSeq(strings.TrimSpace(string(out)), "\n") {
		path, ncgo, _ := strings.Cut(line, " ")
		m[path] = ncgo
	}
	return m
}

// The measuring core, the geometry and the simulator build without cgo:
// the collectors and memory queries that need it are passed in from cmd.
func TestCoreWithoutCgo(t *testing.T) {
	t.Parallel()
	for _, pkg := range []string{"harness", "kv", "vllmsim"} {
		for path, ncgo := range deps(t, pkg, "CGO_ENABLED=0") {
			// The standard library's own cgo (runtime/cgo, the net
			// resolver) is not a native library kvtier loads.
			if ncgo != "0" && strings.Contains(path, ".") {
				t.Errorf("%s depends on %s, which has cgo files", pkg, path)
			}
			for _, bad := range []string{"kvtier/cuda", "kvtier/rdma", "kvtier/csrc", "kvtier/tiers", "kvtier/system", "go-nvml"} {
				if strings.Contains(path, bad) && !strings.HasPrefix(path, module+"system/meminfo") {
					t.Errorf("%s depends on %s", pkg, path)
				}
			}
		}
	}
}

// clockCore lists the files of the measuring core that read the clock
// for row values: every other clock read under harness/ and in the
// serving client is a deadline, a grace period, a nonce or a stamp and
// says so on its line.
var clockCore = []string{"clock/clock.go", "harness/sampler.go"}

// clockDirs are where a clock read must be the core's or say what it is
// for: the suites and the serving client, whose request times are row
// values (TTFT, ITL, E2E).
var clockDirs = []string{"harness", "serving"}

// Every duration that becomes a row value is measured by the core (the
// Sampler's timers, the Stopwatch and the request timer); any other read
// of the clock under harness/ or serving/ carries a comment on the same
// line saying what it is for.
func TestOneClock(t *testing.T) {
	t.Parallel()
	root := filepath.Join("..", "..")
	for _, dir := range clockDirs {
		for _, bad := range uncommentedClockReads(t, root, dir) {
			t.Errorf("%s reads the clock outside the core without saying why", bad)
		}
	}
}

// uncommentedClockReads returns "FILE:LINE: line" for each read of the
// clock without a comment on its line in the non-test files under dir,
// the core's files aside.
func uncommentedClockReads(t *testing.T, root, dir string) []string {
	t.Helper()
	read := regexp.MustCompile(`\btime\.(Now|Since|Until)\(`)
	var out []string
	err := filepath.WalkDir(filepath.Join(root, dir), func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if slices.Contains(clockCore, filepath.ToSlash(rel)) {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for i, line := range strings.Split(string(b), "\n") {
			if read.MatchString(line) && !strings.Contains(line, "//") {
				out = append(out, fmt.Sprintf("%s:%d: %s", filepath.ToSlash(rel), i+1, strings.TrimSpace(line)))
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// Analysis sits below presentation: plots does not depend on report, and
// neither report, plots nor analysis (their helpers included) depends on
// a suite: what they know of a suite comes from the results it wrote.
func TestPresentationAboveAnalysis(t *testing.T) {
	t.Parallel()
	if _, ok := deps(t, "plots")[module+"report"]; ok {
		t.Error("plots depends on report; what both need belongs in analysis")
	}
	for _, pkg := range []string{"analysis", "report", "report/reporttest", "plots"} {
		for path := range deps(t, pkg) {
			if strings.HasPrefix(path, module+"harness/") {
				t.Errorf("%s depends on %s", pkg, path)
			}
		}
	}
}
