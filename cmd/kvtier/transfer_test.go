package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kvtier/kvtier/cuda/cudatest"
	"github.com/kvtier/kvtier/harness/sweep"
	"github.com/kvtier/kvtier/harness/transfer"
	"github.com/kvtier/kvtier/rdma"
	"github.com/kvtier/kvtier/rdma/rdmatest"
	"github.com/kvtier/kvtier/results"
)

func readTransfer(t *testing.T, dir string) []results.Row {
	t.Helper()
	rows, _, err := results.ReadCSV(filepath.Join(dir, transfer.File))
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

func TestTransferEmbedded(t *testing.T) {
	dir := t.TempDir()
	code, stdout, stderr := runCLI(t, "transfer", "--sizes", "1MiB,4MiB", "--reps", "2", "--conns", "2",
		"--layout", "layerwise,blockwise,contiguous", "--line-rate", "100", "--out", dir)
	if code != exitOK || noisy(stderr) {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	if !strings.Contains(stderr, "embedded loopback peer") || strings.TrimSpace(stdout) != filepath.Join(dir, transfer.File) {
		t.Errorf("stderr does not say the peer is embedded, or stdout is not the CSV's path: %s\n%s", stderr, stdout)
	}
	rows := readTransfer(t, dir)
	if len(rows) != 12 {
		t.Fatalf("%d rows, want 3 layouts x 2 sizes x 2 reps", len(rows))
	}
	for _, r := range rows {
		if r.Status != results.StatusOK || r.Get("verified") != "true" || r.Get("path") != "loopback" ||
			r.Transport != "tcp" || r.Tier != "remote" || r.GBps <= 0 || r.Get("line_gb_per_s") != "12.5" ||
			r.Float("line_frac") <= 0 || r.Float("t_3gib_s") <= 0 {
			t.Fatalf("row %+v", r)
		}
		want := map[string]int64{"layerwise": 16384, "blockwise": 1572864, "contiguous": r.Bytes}[r.Layout]
		if r.ChunkBytes != want {
			t.Fatalf("%s chunk_bytes %d, want %d", r.Layout, r.ChunkBytes, want)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "transfer_summary.csv")); err != nil {
		t.Fatal(err)
	}
}

// TestTransferTwoPeers writes rows of two peers into one transfer.csv and
// skips a size over the peers' pools with the reason.
func TestTransferTwoPeers(t *testing.T) {
	a, _ := startServe(t, "--pool", "8MiB")
	b, _ := startServe(t, "--pool", "8MiB", "--seed", "9")
	dir := t.TempDir()
	mustRunCLI(t, "transfer", "--peer", a+","+b, "--sizes", "2MiB,16MiB", "--reps", "1",
		"--layout", "blockwise", "--out", dir)
	rows := readTransfer(t, dir)
	seen := map[string]int{}
	for _, r := range rows {
		seen[r.Get("peer")+" "+string(r.Status)]++
		if r.Get("path") != "intra" {
			t.Errorf("path %q for a loopback peer", r.Get("path"))
		}
		if r.Status == results.StatusSkipped && !strings.Contains(r.Reason, "exceeds the peer's pool") {
			t.Errorf("skip reason %q", r.Reason)
		}
	}
	for _, p := range []string{a, b} {
		if seen[p+" ok"] != 1 || seen[p+" skipped"] != 1 {
			t.Fatalf("rows per peer: %v", seen)
		}
	}
}

func TestTransferPeerKilledMidway(t *testing.T) {
	addr, stop := startServe(t, "--pool", "64MiB")
	dir := t.TempDir()
	done := make(chan [2]string, 1)
	var code int
	go func() {
		var c int
		var stderr string
		c, _, stderr = runCLI(t, "transfer", "--peer", addr, "--sizes", "4MiB,8MiB,16MiB,32MiB", "--reps", "200",
			"--warmup", "0", "--layout", "layerwise", "--out", dir)
		code = c
		done <- [2]string{"", stderr}
	}()
	// Stop the peer once some rows are on disk.
	deadline := time.Now().Add(20 * time.Second)
	for {
		b, _ := os.ReadFile(filepath.Join(dir, transfer.File))
		if strings.Count(string(b), "\n") >= 4 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no rows written")
		}
		time.Sleep(2 * time.Millisecond)
	}
	stop()
	var res [2]string
	select {
	case res = <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("transfer did not end after its peer stopped")
	}
	last := res[1]
	if code != exitFail || !strings.Contains(last, "peer "+addr+" failed") || !strings.Contains(last, "1 row is an error") {
		t.Fatalf("exit %d, stderr %q (want exit 1 naming the peer and the error row)", code, last)
	}
	rows := readTransfer(t, dir)
	var ok, bad int
	for _, r := range rows {
		switch r.Status {
		case results.StatusOK:
			ok++
		case results.StatusError:
			bad++
		}
	}
	if ok < 3 || bad != 1 || rows[len(rows)-1].Status != results.StatusError {
		t.Fatalf("%d ok rows, %d error rows (last %+v)", ok, bad, rows[len(rows)-1])
	}
}

func TestTransferBadInput(t *testing.T) {
	dir := t.TempDir()
	code, _, stderr := runCLI(t, "transfer", "--layout", "diagonal", "--reps", "0", "--sizes", "1MiB,,2", "--out", dir)
	if code != exitUsage || strings.Count(stderr, "\n") != 1 {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	for _, w := range []string{"--layout", "--reps: want 1 to 1000000, got 0", "--sizes"} {
		if !strings.Contains(stderr, w) {
			t.Errorf("stderr %q lacks %q", stderr, w)
		}
	}
	// An unreachable peer is one line and exit 2.
	// An unreachable peer is one line and exit 2, before any results
	// directory exists; the same for the sweep's remote tier.
	for _, args := range [][]string{
		{"transfer", "--peer", "127.0.0.1:1", "--sizes", "1MiB", "--out", filepath.Join(dir, "r")},
		{"sweep", "--tiers", "remote", "--peer", "127.0.0.1:1", "--prefix", "1k", "--out", filepath.Join(dir, "r")},
	} {
		code, _, stderr = runCLI(t, args...)
		if code != exitUsage || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, "--peer: 127.0.0.1:1: unreachable") {
			t.Fatalf("%s unreachable: exit %d, stderr %q", args[0], code, stderr)
		}
		if _, err := os.Stat(filepath.Join(dir, "r")); !os.IsNotExist(err) {
			t.Fatalf("%s with an unreachable peer left a results directory (%v)", args[0], err)
		}
	}
}

func TestTransferVerbsWithoutDevice(t *testing.T) {
	if names, err := rdma.DeviceNames(""); err == nil && len(names) > 0 {
		t.Skipf("this machine has RDMA devices %v", names)
	}
	dir := t.TempDir()
	code, _, stderr := runCLI(t, "transfer", "--transport", "verbs", "--sizes", "1MiB", "--out", filepath.Join(dir, "out"))
	if code != exitUsage || !strings.Contains(stderr, "no RDMA device") || strings.Count(stderr, "\n") != 1 {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "out")); !os.IsNotExist(err) {
		t.Fatalf("a results directory was created: %v", err)
	}
}

// TestTransferVerbsFake runs kvtier transfer, serve and the remote tier's
// sweep over transport verbs against the fake libibverbs, in a child
// process where it is the first libibverbs loaded.
func TestTransferVerbsFake(t *testing.T) {
	if os.Getenv("KVTIER_FAKE_CHILD") == "" {
		lib := rdmatest.Build(t)
		cmd := exec.Command(os.Args[0], "-test.run=^TestTransferVerbsFake$", "-test.v")
		cmd.Env = append(os.Environ(), "KVTIER_FAKE_CHILD=1", "KVTIER_LIBIBVERBS="+lib)
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "--- PASS: TestTransferVerbsFake") {
			t.Fatalf("child: %v\n%s", err, out)
		}
		return
	}
	dir := t.TempDir()
	// NCCL's variable sets the traffic class where --ib-tc is absent; a
	// bad one is bad input naming it.
	t.Setenv("NCCL_IB_TC", "106")
	t.Setenv("NCCL_IB_SL", "16")
	code, _, stderr := runCLI(t, "transfer", "--transport", "verbs", "--sizes", "1MiB", "--out", filepath.Join(dir, "sl"))
	if code != exitUsage || !strings.Contains(stderr, `NCCL_IB_SL="16": want an integer 0-15`) {
		t.Fatalf("bad NCCL_IB_SL: exit %d, stderr %q", code, stderr)
	}
	t.Setenv("NCCL_IB_SL", "")
	code, _, stderr = runCLI(t, "transfer", "--transport", "verbs", "--sizes", "1MiB,4MiB", "--layout", "layerwise,blockwise",
		"--qps", "2", "--reps", "2", "--ib-sl", "3", "--out", filepath.Join(dir, "ok"))
	if code != exitOK || noisy(stderr) {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	t.Setenv("NCCL_IB_TC", "")
	rows := readTransfer(t, filepath.Join(dir, "ok"))
	if len(rows) != 8 {
		t.Fatalf("%d rows", len(rows))
	}
	for _, r := range rows {
		if r.Status != results.StatusOK || r.Get("verified") != "true" || r.Transport != "verbs" || r.Get("device") != "fake0" || r.Get("conns") != "2" ||
			r.Get("ib_tc") != "106" || r.Get("ib_sl") != "3" || !strings.HasPrefix(r.Get("device_reason"), "first active port") {
			t.Fatalf("row %+v", r)
		}
	}

	// Stores push every chunk by RDMA WRITE into the embedded peer's
	// pool (writable for a store run), verified by reading it back.
	mustRunCLI(t, "transfer", "--direction", "store", "--transport", "verbs", "--sizes", "1MiB", "--layout", "layerwise",
		"--reps", "2", "--out", filepath.Join(dir, "store"))
	mustRunCLI(t, "sweep", "--backend", "host", "--direction", "store", "--tiers", "remote", "--transport", "verbs", "--prefix", "32",
		"--copy", "percopy", "--reps", "2", "--out", filepath.Join(dir, "sweepstore"))
	stored, _, err := results.ReadCSV(filepath.Join(dir, "sweepstore", sweep.File))
	if err != nil {
		t.Fatal(err)
	}
	trows := readTransfer(t, filepath.Join(dir, "store"))
	if len(trows) == 0 || len(stored) == 0 {
		t.Fatalf("%d transfer and %d sweep store rows", len(trows), len(stored))
	}
	for _, r := range append(trows, stored...) {
		if r.Status != results.StatusOK || r.Get("verified") != "true" || r.Transport != "verbs" || r.Get(results.DirectionColumn) != "store" {
			t.Fatalf("store row %+v", r)
		}
	}

	t.Setenv("KVTIER_TEST_CORRUPT_RKEY", "1")
	code, _, stderr = runCLI(t, "transfer", "--transport", "verbs", "--sizes", "1MiB", "--layout", "blockwise", "--reps", "1",
		"--out", filepath.Join(dir, "bad"))
	if code != exitFail || !strings.Contains(stderr, "remote access error") || !strings.Contains(stderr, "1 row is an error") {
		t.Fatalf("corrupt rkey: exit %d, stderr %q", code, stderr)
	}
	rows = readTransfer(t, filepath.Join(dir, "bad"))
	if len(rows) != 1 || rows[0].Status != results.StatusError {
		t.Fatalf("corrupt rkey rows %+v", rows)
	}
	t.Setenv("KVTIER_TEST_CORRUPT_RKEY", "")

	for _, cmd := range [][]string{
		{"serve", "--transport", "verbs", "--listen", "127.0.0.1:0", "--gid-index", "99"},
		{"transfer", "--transport", "verbs", "--gid-index", "99", "--sizes", "1MiB", "--out", filepath.Join(dir, "gid")},
	} {
		code, _, stderr = runCLI(t, cmd...)
		if code != exitUsage || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, "GID index 99 does not exist") {
			t.Fatalf("%v: exit %d, stderr %q", cmd, code, stderr)
		}
	}

	// Into GPU memory of the fake driver: GPUDirect when the fake
	// device memory registers through the fake verbs, else the bounce
	// path; verified either way.
	cudatest.Use(t)
	stdout, _ := mustRunCLI(t, "transfer", "--transport", "verbs", "--sizes", "1MiB", "--layout", "layerwise,contiguous",
		"--reps", "2", "--dst-mem", "gpu", "--out", filepath.Join(dir, "gpu"))
	rows = readTransfer(t, filepath.Join(dir, "gpu"))
	if len(rows) != 4 {
		t.Fatalf("%d rows", len(rows))
	}
	for _, r := range rows {
		p := r.Get("path")
		if r.Status != results.StatusOK || r.Get("verified") != "true" || r.Get("dst_mem") != "gpu" ||
			(p != "loopback+gpudirect" && p != "loopback+bounce") {
			t.Fatalf("row %+v", r)
		}
	}
	t.Logf("verbs into GPU memory: path %s; %s", rows[0].Get("path"), stdout)

	mustRunCLI(t, "sweep", "--backend", "host", "--tiers", "remote", "--transport", "verbs", "--prefix", "32",
		"--copy", "percopy", "--reps", "2", "--out", filepath.Join(dir, "sweep"))
	srows, _, err := results.ReadCSV(filepath.Join(dir, "sweep", sweep.File))
	if err != nil {
		t.Fatal(err)
	}
	if len(srows) == 0 {
		t.Fatal("no sweep rows")
	}
	for _, r := range srows {
		if r.Tier != "remote" || r.Status != results.StatusOK || r.Transport != "verbs" || r.Get("device") != "fake0" ||
			r.Get("device_reason") == "" || r.Get("ib_tc") != "0" {
			t.Fatalf("sweep row %+v", r)
		}
	}
	// The manifest says why that device, as transfer's does.
	m, err := results.ReadManifest(filepath.Join(dir, "sweep", "manifest.json"))
	if err != nil || m.Settings["rdma_device_reason"] != srows[0].Get("device_reason") {
		t.Errorf("sweep manifest's rdma_device_reason %q (%v), want the rows' %q", m.Settings["rdma_device_reason"], err, srows[0].Get("device_reason"))
	}
}

// TestTransferGPU runs kvtier transfer into GPU memory with peer-copy
// rows on a fake two-GPU driver, then plot and report on the results.
func TestTransferGPU(t *testing.T) {
	t.Setenv("FAKECUDA_DEVICES", "2")
	cudatest.Use(t)
	dir := filepath.Join(t.TempDir(), "out")
	code, stdout, stderr := runCLI(t, "transfer", "--sizes", "1MiB,2MiB", "--reps", "2", "--layout", "layerwise,contiguous",
		"--pool", "8MiB", "--dst-mem", "gpu", "--gpu", "1", "--peer-copy", "0,1", "--out", dir)
	if code != exitOK || noisy(stderr) {
		t.Fatalf("exit %d, stderr %q, stdout %s", code, stderr, stdout)
	}
	rows := readTransfer(t, dir)
	var net, pc int
	for _, r := range rows {
		if r.Status != results.StatusOK || r.Get("verified") != "true" || r.Get("dst_mem") != "gpu" || r.Backend != "cuda" {
			t.Fatalf("row %+v", r)
		}
		switch r.Get("path") {
		case "loopback+bounce":
			net++
			if !strings.Contains(r.Get("gpu"), "Fake CUDA Device 1") {
				t.Fatalf("network row on gpu %q, want device 1", r.Get("gpu"))
			}
		case "peercopy":
			pc++
			if r.Get("device") != "GPU0->GPU1 (P2P)" || r.Transport != "cuda" {
				t.Fatalf("peer copy row %+v", r)
			}
		default:
			t.Fatalf("path %q", r.Get("path"))
		}
	}
	if net != 8 || pc != 8 {
		t.Fatalf("%d network and %d peer copy rows, want 8 and 8", net, pc)
	}
	for _, cmd := range []string{"plot", "report"} {
		mustRunCLI(t, cmd, dir)
	}
}

func TestTransferGPUBadInput(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("KVTIER_LIBCUDA", filepath.Join(dir, "no-libcuda.so.1"))
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--dst-mem", "gpu"}, "--dst-mem: cuda: cannot load libcuda (tried "},
		{[]string{"--dst-mem", "hbm"}, `--dst-mem: want host or gpu, got "hbm"`},
		{[]string{"--peer-copy", "0"}, "--peer-copy: want SRC,DST: two different GPU ordinals, got [0]"},
		{[]string{"--peer-copy", "0,0"}, "--peer-copy: want SRC,DST: two different GPU ordinals, got [0 0]"},
		{[]string{"--peer-copy", "0,x"}, "--peer-copy"},
		{[]string{"--gpu", "-1"}, "--gpu: want 0 to 1023, got -1"},
	} {
		out := filepath.Join(dir, "out")
		code, _, stderr := runCLI(t, append([]string{"transfer", "--sizes", "1MiB", "--out", out}, tc.args...)...)
		if code != exitUsage || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, tc.want) {
			t.Fatalf("%v: exit %d, stderr %q, want %q", tc.args, code, stderr, tc.want)
		}
		if _, err := os.Stat(out); !os.IsNotExist(err) {
			t.Fatalf("%v left a results directory (%v)", tc.args, err)
		}
	}
}
