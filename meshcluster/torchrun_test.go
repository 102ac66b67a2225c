//go:build linux

package meshcluster

import (
	"context"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// TestTorchrunEnvironment runs three ranks the way a torchrun-style
// launcher (a Kubernetes Job, JobSet, LeaderWorkerSet) starts them: only
// RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR and MASTER_PORT, set here.
// Ranks 0 and 1 share node n1 (one namespace and host name), rank 2 is
// on n2: the pairs between 0 and 1 are intra, the rest inter.
func TestTorchrunEnvironment(t *testing.T) {
	c := need(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	type rank struct{ node, local string }
	ranks := []rank{{"n1", "0"}, {"n1", "1"}, {"n2", "0"}}
	outs := make([]string, len(ranks))
	codes := make([]int, len(ranks))
	var wg sync.WaitGroup
	for i, r := range ranks {
		// nsenter + unshare --uts: the rank's node is a namespace with a
		// host name of its own, as on a real cluster.
		argv := append([]string{"nsenter", "--net=/run/netns/" + c.id + "-" + r.node, "unshare", "--uts", "sh", "-c",
			`hostname "$0"; exec "$@"`, "torch-" + r.node}, c.meshArgs("torchrun")...)
		cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
		cmd.Env = append(os.Environ(), "KVTIER_TOKEN=mesh-test-token", fmt.Sprintf("RANK=%d", i), "WORLD_SIZE=3",
			"LOCAL_RANK="+r.local, "MASTER_ADDR="+c.net+".1", "MASTER_PORT=29617", "SLURM_PROCID=", "SLURM_NTASKS=")
		cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGKILL) }
		wg.Go(func() {
			b, err := cmd.CombinedOutput()
			outs[i] = string(b)
			if ee, ok := err.(*exec.ExitError); ok {
				codes[i] = ee.ExitCode()
			} else if err != nil {
				codes[i] = -1
			}
		})
	}
	wg.Wait()
	for i, code := range codes {
		if code != 0 {
			t.Fatalf("rank %d: exit %d:\n%s", i, code, tail(outs[i], 20))
		}
	}
	if !strings.Contains(outs[0], "launcher torchrun") {
		t.Errorf("rank 0 did not detect the torchrun-style launcher:\n%s", tail(outs[0], 5))
	}
	got := pairs(t, readMatrix(t, filepath.Join(c.dir, "torchrun")), 2)
	want := map[string]string{"0->1": "intra", "1->0": "intra", "0->2": "inter", "2->0": "inter", "1->2": "inter", "2->1": "inter"}
	if !maps.Equal(got, want) {
		t.Errorf("pairs %v, want %v", got, want)
	}
	checkRanks(t, filepath.Join(c.dir, "torchrun"), 3, "torchrun")
}
