package layers

import (
	"maps"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// list runs go list with format over patterns in the module's root,
// with env added to the environment, and returns its lines.
func list(t *testing.T, format string, patterns []string, env ...string) []string {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("no go command: %v", err)
	}
	cmd := exec.Command(goBin, append([]string{"list", "-f", format}, patterns...)...)
	cmd.Dir = "../.."
	cmd.Env = append(cmd.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go list %v: %v\n%s", patterns, err, out)
	}
	return strings.Split(strings.TrimSpace(string(out)), "\n")
}

// harnessChildren are the packages directly under harness/, by path
// relative to the module.
func harnessChildren(t *testing.T) []string {
	t.Helper()
	var out []string
	for _, p := range list(t, "{{.ImportPath}}", []string{"./harness/..."}) {
		rel := strings.TrimPrefix(p, module)
		if strings.Count(rel, "/") == 1 {
			out = append(out, rel)
		}
	}
	return out
}

// suiteList is the package that names every suite for the driver.
const suiteList = "harness/suites"

// Every direct child of harness/ but the suite list is a suite, and the
// suite list names each of them: what suites share sits below harness/
// (workload, replayer, xfer), not in a package beside them.
func TestHarnessHoldsSuites(t *testing.T) {
	t.Parallel()
	children := harnessChildren(t)
	named := list(t, `{{join .Imports "\n"}}`, []string{"./" + suiteList})
	for _, c := range children {
		if c != suiteList && !slices.Contains(named, module+c) {
			t.Errorf("%s is under harness/ and not in %s's list: a suite's package, or what suites share, which belongs below harness/", c, suiteList)
		}
	}
}

// No suite depends on another: what two suites share (the workload model,
// the replay engine, the transfer core) sits in a package below both.
func TestSuitesDoNotImportEachOther(t *testing.T) {
	t.Parallel()
	var suites []string
	for _, c := range harnessChildren(t) {
		if c != suiteList {
			suites = append(suites, "./"+c)
		}
	}
	for _, line := range list(t, `{{.ImportPath}} {{join .Deps " "}}`, suites) {
		fields := strings.Fields(line)
		for _, dep := range fields[1:] {
			if slices.Contains(suites, "./"+strings.TrimPrefix(dep, module)) {
				t.Errorf("suite %s depends on suite %s; what they share belongs in a package below both", strings.TrimPrefix(fields[0], module), strings.TrimPrefix(dep, module))
			}
		}
	}
}

// The serving client sits below the measuring core and the suites:
// nothing under harness/ (the core included) is among its dependencies.
func TestServingBelowHarness(t *testing.T) {
	t.Parallel()
	for _, dep := range list(t, `{{join .Deps "\n"}}`, []string{"./serving"}) {
		if dep == module+"harness" || strings.HasPrefix(dep, module+"harness/") {
			t.Errorf("serving depends on %s", dep)
		}
	}
}

// cgoFree are the packages that build with CGO_ENABLED=0: the suites that
// move no device bytes (interfere is harness/mb1), the simulator and its
// command, the serving client and the presentation and results layers.
var cgoFree = []string{"./harness/probe", "./harness/mb1", "./harness/replay", "./harness/knee", "./harness/trace",
	"./vllmsim/...", "./serving", "./analysis", "./report", "./plots", "./results"}

// The packages of cgoFree link no cgo package of kvtier or of a module it
// uses (a device, verbs or NVML library): their dependencies, listed with
// cgo on, have no cgo file outside the standard library. Before, every
// suite depended on cli, which held the backend and peer flags, and
// go test ./harness/probe compiled five C shims.
func TestCgoFreePackages(t *testing.T) {
	t.Parallel()
	by := map[string]string{} // a dependency outside the standard library: a root that needs it
	for _, line := range list(t, `{{.ImportPath}}|{{join .Deps " "}}`, cgoFree, "CGO_ENABLED=1") {
		pkg, deps, _ := strings.Cut(line, "|")
		for _, dep := range append(strings.Fields(deps), pkg) {
			if _, ok := by[dep]; !ok && strings.Contains(dep, ".") {
				by[dep] = strings.TrimPrefix(pkg, module)
			}
		}
	}
	paths := slices.Sorted(maps.Keys(by))
	for _, line := range list(t, `{{.ImportPath}} {{len .CgoFiles}}`, paths, "CGO_ENABLED=1") {
		if path, n, _ := strings.Cut(line, " "); n != "0" {
			t.Errorf("%s depends on %s, which has cgo files: it must build with CGO_ENABLED=0", by[path], path)
		}
	}
}
