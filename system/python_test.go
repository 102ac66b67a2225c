package system_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kvtier/kvtier/system"
)

// fakePython writes an executable script that prints lines as a Python
// asked for its site-packages would.
func fakePython(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "python3")
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestPythonSitePackages(t *testing.T) {
	t.Parallel()
	py := fakePython(t, `[ "$1" = -c ] || exit 3; printf '/v/lib/python3.12/site-packages\nnot a path\n/home/u/.local/lib/python3.12/site-packages\n'`)
	sites, err := system.PythonSitePackages(py)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"/v/lib/python3.12/site-packages", "/home/u/.local/lib/python3.12/site-packages"}
	if !slices.Equal(sites, want) {
		t.Errorf("sites = %q, want %q", sites, want)
	}
	dirs := system.CUBLASDirs(sites[:1])
	if !slices.Equal(dirs, []string{"/v/lib/python3.12/site-packages/nvidia/cublas/lib", "/v/lib/python3.12/site-packages/nvidia/cu13/lib"}) {
		t.Errorf("cuBLAS dirs = %q", dirs)
	}
	bad := fakePython(t, "echo broken >&2; exit 1")
	if _, err := system.PythonSitePackages(bad); err == nil || !strings.Contains(err.Error(), "broken") {
		t.Errorf("failing python: %v", err)
	}
}

// TestPythonSitePackagesReal asks a real Python, where there is one.
func TestPythonSitePackagesReal(t *testing.T) {
	t.Parallel()
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("no python3")
	}
	start := time.Now()
	sites, err := system.PythonSitePackages(py)
	if took := time.Since(start); err != nil && took >= system.PythonTimeout {
		// Python's start-up reads hundreds of files; on a machine whose
		// cores and disk other work holds it has taken longer than the
		// limit kvtier gives it.
		t.Skipf("%s did not answer within the %v limit on this machine (%v): %v", py, system.PythonTimeout, took.Round(time.Millisecond), err)
	}
	if err != nil || len(sites) == 0 {
		t.Fatalf("sites = %q, %v", sites, err)
	}
}
