package shim

import (
	"os/exec"
	"strings"
	"testing"
)

// TestBuildWithoutCgoSaysWhy builds kvtier's shims with CGO_ENABLED=0:
// the command's packages still load (no build-constraint error for each
// shim package) and the build fails once, in this package, saying that
// kvtier needs cgo.
func TestBuildWithoutCgoSaysWhy(t *testing.T) {
	t.Parallel()
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("no go command: %v", err)
	}
	list := exec.Command(goBin, "list", "-deps", "github.com/kvtier/kvtier/cmd/kvtier")
	list.Env = append(list.Environ(), "CGO_ENABLED=0")
	if out, err := list.CombinedOutput(); err != nil {
		t.Errorf("go list without cgo: %v\n%s", err, out)
	}
	build := exec.Command(goBin, "build", "-o", "/dev/null", "github.com/kvtier/kvtier/csrc/shim")
	build.Env = append(build.Environ(), "CGO_ENABLED=0")
	out, err := build.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "kvtier needs cgo: CGO_ENABLED=1 and gcc") {
		t.Errorf("go build without cgo: %v\n%s", err, out)
	}
}
