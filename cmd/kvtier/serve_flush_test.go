package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kvtier/kvtier/cuda/cudatest"
	"github.com/kvtier/kvtier/harness/sweep"
	"github.com/kvtier/kvtier/rdma/rdmatest"
	"github.com/kvtier/kvtier/results"
)

// TestServeGPUPoolFlushedBeforeVerify runs kvtier serve with a GPU pool
// (the fake libcuda, whose device orders no GPUDirect RDMA writes) taking
// a remote store sweep's RDMA WRITEs over the fake libibverbs, in a child
// process where it is the first libibverbs loaded: the peer flushes its
// pool (cuFlushGPUDirectRDMAWrites) before each verified rep reads back
// what was stored, and the rows are verified.
func TestServeGPUPoolFlushedBeforeVerify(t *testing.T) {
	if inFakeVerbsChild(t) {
		return
	}
	t.Setenv("FAKECUDA_GDR_ORDERING", "0")
	t.Setenv("FAKE_IBV_DMABUF", "ok")
	libs := cudatest.Use(t)
	addr, _ := startServe(t, "--mem", "gpu", "--pool", "16MiB", "--writable", "--transport", "verbs")
	dir := t.TempDir()
	mustRunCLI(t, "sweep", "--backend", "host", "--direction", "store", "--tiers", "remote", "--transport", "verbs",
		"--peer", addr, "--prefix", "32", "--copy", "percopy", "--reps", "2", "--out", dir)
	rows, _, err := results.ReadCSV(filepath.Join(dir, sweep.File))
	if err != nil {
		t.Fatal(err)
	}
	verified := 0
	for _, r := range rows {
		if r.Status != results.StatusOK || r.Transport != "verbs" || r.Get(results.DirectionColumn) != "store" {
			t.Fatalf("row %+v", r)
		}
		if r.Get("verified") == "true" {
			verified++
		}
	}
	n, err := cudatest.GPUDirectFlushes(libs)
	if err != nil || verified == 0 || n < int64(verified) {
		t.Errorf("%d flushes of the peer's GPU pool (%v) for %d verified store reps; want one before each", n, err, verified)
	}
}

// TestRemoteStoreGPUDirect runs the remote tier's stores from GPU memory
// of the fake libcuda over the fake libibverbs, in a child process: where
// the fake NIC registers the GPU memory (DMA-BUF), the RDMA WRITEs leave
// from it (path=gpudirect); where it refuses, through a pinned bounce
// buffer (path=bounce) with the reason in gpudirect_reason. Rows are
// verified either way.
func TestRemoteStoreGPUDirect(t *testing.T) {
	if inFakeVerbsChild(t) {
		return
	}
	cudatest.Use(t)
	for _, tc := range []struct{ dmabuf, path, why string }{
		{"ok", "gpudirect", ""},
		{"", "bounce", "operation not supported"},
	} {
		t.Setenv("FAKE_IBV_DMABUF", tc.dmabuf)
		dir := t.TempDir()
		mustRunCLI(t, "sweep", "--backend", "cuda", "--direction", "store", "--tiers", "remote", "--transport", "verbs",
			"--prefix", "32", "--copy", "percopy", "--reps", "2", "--out", dir)
		rows, _, err := results.ReadCSV(filepath.Join(dir, sweep.File))
		if err != nil {
			t.Fatal(err)
		}
		if len(rows) == 0 {
			t.Fatalf("DMA-BUF %q: no rows", tc.dmabuf)
		}
		for _, r := range rows {
			why := r.Get("gpudirect_reason")
			if r.Status != results.StatusOK || r.Get(results.DirectionColumn) != "store" || r.Get("path") != tc.path ||
				!strings.Contains(strings.ToLower(why), tc.why) || (tc.why == "") != (why == "") {
				t.Fatalf("DMA-BUF %q: row %+v", tc.dmabuf, r)
			}
			if r.Rep == 0 && r.Get("verified") != "true" {
				t.Fatalf("DMA-BUF %q: first rep not verified: %+v", tc.dmabuf, r)
			}
		}
	}
}

// inFakeVerbsChild runs the calling test again in a child process whose
// first libibverbs is the fake one, and reports true once it passed
// there; in that child it reports false, and the test runs.
func inFakeVerbsChild(t *testing.T) bool {
	t.Helper()
	if os.Getenv("KVTIER_FAKE_CHILD") != "" {
		return false
	}
	lib := rdmatest.Build(t)
	cmd := exec.Command(os.Args[0], "-test.run=^"+t.Name()+"$", "-test.v")
	cmd.Env = append(os.Environ(), "KVTIER_FAKE_CHILD=1", "KVTIER_LIBIBVERBS="+lib)
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS: "+t.Name()) {
		t.Fatalf("child: %v\n%s", err, out)
	}
	return true
}
