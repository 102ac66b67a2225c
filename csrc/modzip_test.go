package csrc_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"golang.org/x/mod/module"
	"golang.org/x/mod/zip"
)

// TestModuleZipBuilds makes a module zip of this module as the go command
// would for `go install github.com/kvtier/kvtier/cmd/kvtier@VERSION`
// (golang.org/x/mod/zip: no symbolic links, no file names a zip refuses),
// unpacks it and builds cmd/kvtier there, offline, from the same module
// cache. A C source reachable only through a symlink, or a path with ':',
// breaks it.
func TestModuleZipBuilds(t *testing.T) {
	if testing.Short() {
		t.Skip("builds cmd/kvtier from a module zip")
	}
	goCmd, err := exec.LookPath("go")
	if err != nil {
		t.Skip("the go command is not on PATH")
	}
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	m := module.Version{Path: "github.com/kvtier/kvtier", Version: "v0.0.0-20260101000000-000000000000"}
	tmp := t.TempDir()
	zf, err := os.Create(filepath.Join(tmp, "module.zip"))
	if err != nil {
		t.Fatal(err)
	}
	if err := zip.CreateFromDir(zf, m, root); err != nil {
		t.Fatalf("module zip of %s: %v", root, err)
	}
	if err := zf.Close(); err != nil {
		t.Fatal(err)
	}
	src := filepath.Join(tmp, "src")
	if err := zip.Unzip(src, m, zf.Name()); err != nil {
		t.Fatalf("unzip: %v", err)
	}
	cmd := exec.Command(goCmd, "build", "-trimpath", "-o", filepath.Join(tmp, "kvtier"), "./cmd/kvtier")
	cmd.Dir = src
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOPROXY=off", "GOWORK=off")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/kvtier from the module zip: %v\n%s", err, out)
	}
}
