// Package rdmatest builds a fake libibverbs for tests on machines without
// RDMA: RDMA READs between endpoints of one process run as memcpy, with
// the key and bounds checks a responder makes and the posting discipline
// (RTS, signalled, reads in flight within max_rd_atomic) enforced. Name
// the built library in rdma.Config.Library (or, for kvtier commands, in
// KVTIER_LIBIBVERBS): libibverbs is loaded once per path, so each Build
// is a fresh instance. The fake is compiled against rdma-core's verbs.h,
// which also cross-checks the shim's own declarations (ibvcore.h). It also
// writes sysfs fixture trees (SysfsTree).
package rdmatest

import (
	_ "embed"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

//go:embed fakeibverbs.c.src
var fakeSource []byte

//go:embed fake.map
var fakeMap []byte

// Build compiles the fake library into dir and returns its path. It needs
// gcc and verbs.h (libibverbs-dev).
func Build(dir string) (string, error) {
	src := filepath.Join(dir, "fakeibverbs.c")
	ver := filepath.Join(dir, "fake.map")
	lib := filepath.Join(dir, "libibverbs-fake.so.1")
	if err := os.WriteFile(src, fakeSource, 0o644); err != nil {
		return "", err
	}
	if err := os.WriteFile(ver, fakeMap, 0o644); err != nil {
		return "", err
	}
	out, err := exec.Command("gcc", "-shared", "-fPIC", "-O1", "-Wall", "-Wno-deprecated-declarations",
		"-Wl,--version-script="+ver, "-o", lib, src, "-lpthread").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("rdmatest: build fake libibverbs: %v: %s", err, out)
	}
	return lib, nil
}
