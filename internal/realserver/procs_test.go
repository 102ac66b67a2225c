//go:build servers

package realserver

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// markerVar is the environment variable that marks every process a test
// starts; children inherit it (Ollama passes its environment on to its
// runners), so it finds them even outside the process group.
const markerVar = "KVTIER_REALSERVER_MARK"

// newMark returns a marker unique to this run.
func newMark(t *testing.T) string {
	t.Helper()
	b := make([]byte, 8)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// marked lists the live processes whose environment carries mark (a
// zombie, already ended, shows no environment and is not listed).
func marked(mark string) []int {
	want := []byte(markerVar + "=" + mark + "\x00")
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	var pids []int
	for _, d := range dirs {
		env, err := os.ReadFile(filepath.Join(d, "environ"))
		if err != nil || !bytes.Contains(env, want) {
			continue
		}
		pid, _ := strconv.Atoi(filepath.Base(d))
		if pid != os.Getpid() {
			pids = append(pids, pid)
		}
	}
	return pids
}

// checkNoneLeft waits up to 5 s for every process carrying mark to end,
// then kills what is left and fails t naming it.
func checkNoneLeft(t *testing.T, mark string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		left := marked(mark)
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			var names []string
			for _, pid := range left {
				cmd, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
				names = append(names, strconv.Itoa(pid)+" "+strings.ReplaceAll(string(bytes.TrimRight(cmd, "\x00")), "\x00", " "))
				syscall.Kill(pid, syscall.SIGKILL)
			}
			t.Errorf("processes left after the test (killed now):\n%s", strings.Join(names, "\n"))
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}
