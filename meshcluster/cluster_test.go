//go:build linux

package meshcluster

import (
	"bufio"
	"bytes"
	"context"
	"encoding/csv"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// A cluster is the test cluster scripts/mesh-cluster.sh brought up.
type cluster struct {
	dir    string // work directory: slurm.conf, logs, results
	bin    string // the kvtier binary under test
	conf   string // SLURM_CONF
	net    string // 198.19.X: node K is NET.K
	id     string // name prefix of the namespaces
	script string
}

// The cluster is brought up by the first test that needs it and torn
// down after the last; skipWhy says why it cannot run here, setUpErr
// why it failed.
var (
	once       sync.Once
	theCluster *cluster
	skipWhy    string
	setUpErr   error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if theCluster != nil {
		theCluster.tearDown()
	}
	os.Exit(code)
}

// setUp builds kvtier and brings the cluster up, or says why it cannot.
func setUp() (*cluster, string, error) {
	if testing.Short() {
		return nil, "meshcluster: -short: the cluster tests start Slurm and Open MPI", nil
	}
	if os.Geteuid() != 0 {
		return nil, "meshcluster: needs root (network namespaces, slurmd)", nil
	}
	for _, c := range []string{"srun", "scontrol", "slurmctld", "slurmd", "munged", "mpirun", "nsenter", "unshare"} {
		if _, err := exec.LookPath(c); err != nil {
			if _, err := os.Stat("/usr/sbin/" + c); err != nil {
				return nil, "meshcluster: no " + c + " (scripts/deps.sh test installs slurm-wlm, munge and openmpi-bin)", nil
			}
		}
	}
	dir, err := os.MkdirTemp("", "mesh-cluster-")
	if err != nil {
		return nil, "", err
	}
	root, _ := filepath.Abs("..")
	c := &cluster{dir: dir, bin: filepath.Join(dir, "kvtier"), script: filepath.Join(root, "scripts", "mesh-cluster.sh")}
	build := exec.Command("go", "build", "-o", c.bin, "./cmd/kvtier")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		os.RemoveAll(dir)
		return nil, "", fmt.Errorf("go build: %v\n%s", err, out)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "bash", c.script, "up", dir).CombinedOutput()
	if ee, ok := err.(*exec.ExitError); ok && ee.ExitCode() == 77 {
		os.RemoveAll(dir)
		return nil, "meshcluster: " + strings.TrimSpace(string(out)), nil
	}
	if err != nil {
		c.tearDown()
		return nil, "", fmt.Errorf("mesh-cluster.sh up: %v\n%s", err, out)
	}
	env := keyValues(string(out))
	c.conf, c.net, c.id = env["SLURM_CONF"], env["MESH_NET"], env["MESH_ID"]
	return c, "", nil
}

// keyValues reads KEY=VALUE lines.
func keyValues(s string) map[string]string {
	m := map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(s))
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), "="); ok {
			m[k] = v
		}
	}
	return m
}

func (c *cluster) tearDown() {
	exec.Command("bash", c.script, "down", c.dir).Run()
	os.RemoveAll(c.dir)
}

// need returns the cluster, bringing it up on first use, or skips the
// test.
func need(t *testing.T) *cluster {
	t.Helper()
	once.Do(func() { theCluster, skipWhy, setUpErr = setUp() })
	if setUpErr != nil {
		t.Fatal(setUpErr)
	}
	if theCluster == nil {
		t.Skip(skipWhy)
	}
	return theCluster
}

// A launch is one run of a launcher command and what it printed.
type launch struct {
	out     string // combined stdout and stderr
	code    int
	elapsed time.Duration
}

// run runs argv with the cluster's environment (SLURM_CONF, the run
// token) in its own process group, killed whole after timeout.
func (c *cluster) run(t *testing.T, timeout time.Duration, extraEnv []string, argv ...string) launch {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), "SLURM_CONF="+c.conf, "KVTIER_TOKEN=mesh-test-token")
	cmd.Env = append(cmd.Env, extraEnv...)
	cmd.Dir = c.dir
	var buf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	start := time.Now()
	err := cmd.Run()
	l := launch{out: buf.String(), elapsed: time.Since(start)}
	if ctx.Err() != nil {
		t.Fatalf("%s did not finish in %v:\n%s", strings.Join(argv, " "), timeout, tail(l.out, 40))
	}
	if ee, ok := err.(*exec.ExitError); ok {
		l.code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("%s: %v", argv[0], err)
	}
	return l
}

// tail returns the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// meshArgs are the kvtier mesh arguments every test run uses: small
// sizes, few reps, short timeouts.
func (c *cluster) meshArgs(out string, more ...string) []string {
	args := []string{c.bin, "mesh", "--sizes", "1MiB,4MiB", "--layout", "blockwise", "--reps", "2", "--warmup", "1",
		"--rendezvous-timeout", "20s", "--idle-timeout", "5s", "--out", filepath.Join(c.dir, out)}
	return append(args, more...)
}

// readMatrix reads mesh_matrix.csv of a run as maps of column to cell.
func readMatrix(t *testing.T, dir string) []map[string]string {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, "mesh_matrix.csv"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	if err != nil || len(recs) < 1 {
		t.Fatalf("mesh_matrix.csv: %v", err)
	}
	var out []map[string]string
	for _, rec := range recs[1:] {
		m := map[string]string{}
		for i, col := range recs[0] {
			m[col] = rec[i]
		}
		out = append(out, m)
	}
	return out
}
