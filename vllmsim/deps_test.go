package vllmsim

import (
	"os/exec"
	"strings"
	"testing"
)

// The simulator is cgo-free: it links no driver, verbs or NVML package,
// so it builds and runs where none of them exist.
func TestNoNativeDependencies(t *testing.T) {
	t.Parallel()
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("no go command: %v", err)
	}
	out, err := exec.Command(goBin, "list", "-deps", "-f", "{{.ImportPath}} {{len .CgoFiles}}", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for line := range strings.SplitSeq(strings.TrimSpace(string(out)), "\n") {
		path, ncgo, _ := strings.Cut(line, " ")
		for _, bad := range []string{"kvtier/cuda", "kvtier/rdma", "kvtier/csrc", "kvtier/tiers", "kvtier/harness", "go-nvml"} {
			if strings.Contains(path, bad) {
				t.Errorf("vllmsim depends on %s", path)
			}
		}
		// The standard library's own cgo (runtime/cgo, the net resolver)
		// is not a native library kvtier loads.
		if ncgo != "0" && strings.Contains(path, ".") {
			t.Errorf("vllmsim depends on %s, which has cgo files", path)
		}
	}
}
