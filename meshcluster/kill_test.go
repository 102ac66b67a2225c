//go:build linux

package meshcluster

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// findRank returns the pid of the kvtier process of rank whose command
// line names out, 0 if there is none (yet).
func findRank(rank int, out string) int {
	ents, _ := os.ReadDir("/proc")
	want := []byte("SLURM_PROCID=" + strconv.Itoa(rank) + "\x00")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmdline, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if !bytes.Contains(cmdline, []byte(out)) || !bytes.HasPrefix(cmdline, []byte("/")) {
			continue
		}
		env, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if bytes.Contains(env, want) {
			return pid
		}
	}
	return 0
}

// csvRows counts the data rows of a CSV being written (0 if absent).
func csvRows(path string) int {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	return max(0, bytes.Count(b, []byte("\n"))-1)
}

// TestSrunRankKilled kills rank 2 (SIGKILL) while the first pair is
// measured: its pairs become error rows, the others complete and
// verify, rank 1 exits 0, rank 0 exits 1 (rows are errors), and srun
// returns within the idle timeout of the kill.
func TestSrunRankKilled(t *testing.T) {
	c := need(t)
	out := filepath.Join(c.dir, "killed")
	args := append([]string{"srun", "-N3", "-n3", "--label"},
		c.meshArgs("killed", "--sizes", "16MiB", "--reps", "20")...)
	var killedAt time.Time
	done := make(chan launch, 1)
	go func() { done <- c.run(t, 90*time.Second, nil, args...) }()
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline) && killedAt.IsZero(); time.Sleep(20 * time.Millisecond) {
		if csvRows(filepath.Join(out, "mesh.csv")) < 3 {
			continue
		}
		if pid := findRank(2, out); pid > 0 && syscall.Kill(pid, syscall.SIGKILL) == nil {
			killedAt = time.Now()
		}
	}
	l := <-done
	if killedAt.IsZero() {
		t.Fatalf("rank 2 was never found to kill:\n%s", tail(l.out, 20))
	}
	after := time.Since(killedAt)
	t.Logf("srun returned %v after the kill (exit %d)", after.Round(time.Millisecond), l.code)
	if after > 5*time.Second+10*time.Second {
		t.Errorf("srun returned %v after the kill: longer than the idle timeout (5s) and a margin", after)
	}
	if !strings.Contains(l.out, "1: kvtier mesh: rank 1: done") {
		t.Errorf("rank 1 did not finish cleanly:\n%s", tail(l.out, 20))
	}
	if !strings.Contains(l.out, "0: kvtier mesh: ") || !strings.Contains(l.out, "rows are errors") && !strings.Contains(l.out, "row is an error") {
		t.Errorf("rank 0 did not report error rows (exit 1):\n%s", tail(l.out, 20))
	}
	cells := map[string]map[string]string{}
	for _, m := range readMatrix(t, out) {
		cells[m["src_rank"]+"->"+m["dst_rank"]] = m
	}
	for _, p := range []string{"0->1", "1->0"} {
		if m := cells[p]; m == nil || m["n"] != "20" || m["verified"] != "true" || m["errors"] != "0" {
			t.Errorf("pair %s without rank 2: %v, want 20 ok verified reps", p, m)
		}
	}
	for _, p := range []string{"0->2", "1->2", "2->0", "2->1"} {
		m := cells[p]
		if m == nil || m["errors"] == "0" || !strings.Contains(m["reason"], "rank 2") {
			t.Errorf("pair %s of the killed rank: %v, want error rows naming rank 2", p, m)
			continue
		}
		t.Logf("pair %s: %s error rows: %s", p, m["errors"], m["reason"])
	}
}
