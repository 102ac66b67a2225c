package scripts_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestGPUCheckOldGlibc: a kvtier binary that needs a newer glibc than the
// node has is refused at once (exit 2, nothing run), saying which glibc
// it needs and the command that builds kvtier on the node.
func TestGPUCheckOldGlibc(t *testing.T) {
	t.Parallel()
	for _, tool := range []string{"bash", "timeout", "awk"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("no %s", tool)
		}
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "kvtier")
	old := "#!/bin/sh\necho \"$0: /lib/x86_64-linux-gnu/libc.so.6: version \\`GLIBC_2.32' not found (required by $0)\" >&2\n" +
		"echo \"$0: /lib/x86_64-linux-gnu/libc.so.6: version \\`GLIBC_2.34' not found (required by $0)\" >&2\nexit 1\n"
	if err := os.WriteFile(bin, []byte(old), 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("bash", "gpu-check.sh", filepath.Join(dir, "out"))
	cmd.Env = append(os.Environ(), "KVTIER_BIN="+bin)
	start := time.Now()
	out, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 2 {
		t.Fatalf("exit %v, want 2:\n%s", err, out)
	}
	for _, want := range []string{"needs GLIBC 2.34 but this node has glibc", "go build -trimpath -o bin/kvtier ./cmd/kvtier"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(string(out), "sweep") || time.Since(start) > 30*time.Second {
		t.Errorf("ran on after refusing the binary (%v):\n%s", time.Since(start), out)
	}
}
