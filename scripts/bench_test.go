package scripts_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestBenchFullSaysEstimate runs scripts/bench.sh with a stub kvtier (and
// a stub go, so that no benchmark runs): with FULL=1 its first line says
// how long the full grids take, before the first step; without FULL it
// says nothing of the kind. Before, FULL=1 started an hour's run without
// a word.
func TestBenchFullSaysEstimate(t *testing.T) {
	t.Parallel()
	for _, full := range []string{"1", ""} {
		dir := t.TempDir()
		for name, body := range map[string]string{"kvtier": "exit 0", "go": "exit 0"} {
			if err := os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
				t.Fatal(err)
			}
		}
		cmd := exec.Command("bash", "bench.sh", filepath.Join(dir, "kvtier"), filepath.Join(dir, "out"))
		cmd.Env = append(os.Environ(), "PATH="+dir+":"+os.Getenv("PATH"), "FULL="+full, "KVTIER_ENDPOINT=", "KVTIER_PEER=")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("FULL=%q: %v\n%s", full, err, out)
		}
		first, _, _ := strings.Cut(string(out), "\n")
		said := strings.HasPrefix(first, "== FULL=1: ") && strings.Contains(first, "estimated about an hour")
		if said != (full != "") {
			t.Errorf("FULL=%q: first line %q", full, first)
		}
	}
}
