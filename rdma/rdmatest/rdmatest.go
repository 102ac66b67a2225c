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
	"os"
	"path/filepath"
	"testing"

	"github.com/kvtier/kvtier/internal/fakelib"
)

//go:embed fakeibverbs.c.src
var fakeSource []byte

//go:embed fake.map
var fakeMap []byte

// Build returns the path of a fresh copy of the fake library (compiled
// once, cached). It needs rdma-core's verbs.h (libibverbs-dev): the test
// is skipped with the reason without it or without a C compiler.
func Build(t testing.TB) string {
	t.Helper()
	if _, err := os.Stat("/usr/include/infiniband/verbs.h"); err != nil {
		t.Skipf("rdmatest: no verbs.h to build the fake libibverbs against (install libibverbs-dev): %v", err)
	}
	dir := fakelib.Build(t, fakelib.Lib{
		Name: "libibverbs-fake.so.1", Source: fakeSource, Files: map[string][]byte{"fake.map": fakeMap},
		Flags: []string{"-Wno-deprecated-declarations", "-Wl,--version-script=fake.map"},
	})
	return filepath.Join(dir, "libibverbs-fake.so.1")
}
