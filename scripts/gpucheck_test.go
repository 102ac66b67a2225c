// Package scripts_test runs kvtier's shell scripts end to end.
package scripts_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kvtier/kvtier/csrc/cufilewrap/cufiletest"
	"github.com/kvtier/kvtier/cuda/cudatest"
	"github.com/kvtier/kvtier/system"
)

// fakePython is a python3 with a fake PyTorch: it answers gpu-check's
// site-packages question and, with FAKE_TORCH set, its torch check and
// its H2D measurement (20 GB/s, labelled fake).
const fakePython = `#!/bin/sh
case "$1" in
-c)
	case "$2" in
	*getsitepackages*) echo "$FAKE_SITE" ;;
	*torch*) [ -n "$FAKE_TORCH" ] || exit 1 ;;
	esac ;;
-)
	cat >/dev/null
	echo "torch 0.0-fake cuda 12.8 fake"
	echo "bytes $2"
	echo "gbps_samples 20.00 20.00"
	echo "gbps_median 20.000" ;;
esac
`

// TestGPUCheckOnFakes runs scripts/gpu-check.sh as on a bare GPU node:
// a fresh copy of the script, a prebuilt kvtier, no Go on PATH, the fake
// libcuda as the driver and the fake cuBLAS only where pip's
// nvidia-cublas-cu12 wheel puts it. cuBLAS must be found there (recompute
// rows ok), a reason holding a comma (batch copies hidden) must come out
// whole, the summary must give the GDS mode, the PCIe link, IOMMU mode
// and throttle reasons, and end with the kvtier/PyTorch ratio line, or a
// line saying it is skipped without PyTorch.
func TestGPUCheckOnFakes(t *testing.T) {
	if testing.Short() {
		t.Skip("builds kvtier and runs three sweeps")
	}
	for _, tool := range []string{"bash", "timeout", "awk", "go"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("no %s", tool)
		}
	}
	dir := t.TempDir()
	libs := cudatest.Build(t)
	cufile := cufiletest.Build(t)
	site := filepath.Join(dir, "venv/lib/python3.11/site-packages")
	cublasDir := filepath.Join(site, "nvidia/cublas/lib")
	for _, d := range []string{filepath.Join(dir, "clone/scripts"), filepath.Join(dir, "bin"), cublasDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	copyFile(t, "gpu-check.sh", filepath.Join(dir, "clone/scripts/gpu-check.sh"))
	copyFile(t, libs.CUBLAS, filepath.Join(cublasDir, "libcublas.so.12"))
	if err := os.WriteFile(filepath.Join(dir, "bin/python3"), []byte(fakePython), 0o755); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "kvtier")
	build := exec.Command("go", "build", "-trimpath", "-o", bin, "../cmd/kvtier")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	env := []string{"HOME=" + dir, "PATH=" + filepath.Join(dir, "bin") + ":/usr/bin:/bin", "FAKE_SITE=" + site,
		"KVTIER_BIN=" + bin, "KVTIER_LIBCUDA=" + libs.CUDA, "KVTIER_LIBCUFILE=" + cufile, "FAKECUDA_HIDE=cuMemcpyBatchAsync",
		"PREFIXES=64,128", "TOP=128", "REPS=2", "WARMUP=1", "BUDGET_S=150"}
	log, sum := runCheck(t, dir, "with-torch", append(env, "FAKE_TORCH=1"))
	if !strings.Contains(log, "cuBLAS: pip's wheels at "+cublasDir) || strings.Contains(log, "building kvtier") {
		t.Errorf("cuBLAS not found where pip puts it, or Go was used:\n%s", log)
	}
	for _, want := range []string{
		"cublas   available    libcublas.so.12",
		"  recompute ",
		"n=0 copy mode batch needs cuMemcpyBatchAsync, which this backend lacks\n",
		"rows: ok=32 skipped=8,",
		"PyTorch 20.000 GB/s)",
		// The facts that qualify a bandwidth figure: the fake driver's GPU
		// has no sysfs device here and no NVML, so they say unknown.
		"gds mode: " + system.GDSMode("/") + "\n",
		"gpu0 pcie link: gen? x? at start, gen? x? at the end under load, max gen? x?\n",
		"gpu0 iommu mode: unknown (host: ",
		"gpu0 throttle reasons: unknown at start, unknown at the end; PCIe replays during the run: unknown\n",
	} {
		if !strings.Contains(sum, want) {
			t.Errorf("with PyTorch: no %q in the summary\n%s", want, sum)
		}
	}
	if strings.Contains(sum, "cannot load libcublas") || strings.Contains(sum, "recompute                                    0.000 ms") {
		t.Errorf("recompute did not run on the pip cuBLAS:\n%s", sum)
	}
	_, without := runCheck(t, dir, "without-torch", env)
	if !strings.Contains(without, "ratio kvtier/PyTorch: skipped (PyTorch with CUDA is not installed for python3)") {
		t.Errorf("without PyTorch: no skipped ratio line in\n%s", without)
	}
}

// runCheck runs the script into dir/name and returns its log and summary.
func runCheck(t *testing.T, dir, name string, env []string) (string, string) {
	t.Helper()
	out := filepath.Join(dir, name)
	cmd := exec.Command("bash", filepath.Join(dir, "clone/scripts/gpu-check.sh"), out)
	cmd.Dir, cmd.Env = dir, env
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("gpu-check.sh: %v\n%s", err, b)
	}
	logb, _ := os.ReadFile(filepath.Join(out, "gpu-check.log"))
	sum, err := os.ReadFile(filepath.Join(out, "summary.txt"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(sum)), "\n")
	if last := lines[len(lines)-1]; !strings.HasPrefix(last, "ratio kvtier/PyTorch: ") {
		t.Errorf("%s: the summary's last line is %q", name, last)
	}
	return string(logb), string(sum)
}

func copyFile(t *testing.T, src, dst string) {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, b, 0o755); err != nil {
		t.Fatal(err)
	}
}
