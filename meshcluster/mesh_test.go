//go:build linux

package meshcluster

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kvtier/kvtier/results"
)

// pairs checks that every matrix cell holds n ok, verified reps and no
// error, that its pair label agrees with its nodes, and returns the
// label of each pair "SRC->DST" (one per pair, over every size).
func pairs(t *testing.T, cells []map[string]string, reps int) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, c := range cells {
		key := c["src_rank"] + "->" + c["dst_rank"]
		if c["n"] != strconv.Itoa(reps) || c["verified"] != "true" || c["errors"] != "0" {
			t.Errorf("pair %s, %s bytes: n=%s verified=%s errors=%s (%s)", key, c["bytes"], c["n"], c["verified"], c["errors"], c["reason"])
		}
		want := "inter"
		if c["src_node"] == c["dst_node"] {
			want = "intra"
		}
		if c["pair"] != want {
			t.Errorf("pair %s: labelled %s, nodes %s and %s", key, c["pair"], c["src_node"], c["dst_node"])
		}
		if prev, ok := out[key]; ok && prev != c["pair"] {
			t.Errorf("pair %s labelled %s and %s", key, prev, c["pair"])
		}
		out[key] = c["pair"]
	}
	return out
}

// allPairs is every ordered pair of n ranks.
func allPairs(n int) []string {
	var out []string
	for s := range n {
		for d := range n {
			if s != d {
				out = append(out, fmt.Sprintf("%d->%d", s, d))
			}
		}
	}
	return out
}

// checkRanks checks mesh_ranks.json: n ranks with their manifests, all
// started by launcher.
func checkRanks(t *testing.T, dir string, n int, launcher string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "mesh_ranks.json"))
	if err != nil {
		t.Fatal(err)
	}
	var ranks []struct {
		Rank     int               `json:"rank"`
		Launcher string            `json:"launcher"`
		Manifest *results.Manifest `json:"manifest"`
	}
	if err := json.Unmarshal(b, &ranks); err != nil {
		t.Fatal(err)
	}
	if len(ranks) != n {
		t.Fatalf("mesh_ranks.json: %d ranks, want %d", len(ranks), n)
	}
	for i, r := range ranks {
		if r.Rank != i || r.Launcher != launcher || r.Manifest == nil || r.Manifest.Host.Hostname == "" {
			t.Errorf("mesh_ranks.json rank %d: rank %d, launcher %q, manifest %v", i, r.Rank, r.Launcher, r.Manifest != nil)
		}
	}
}

// TestSrunAndMpirunThreeNodes: srun -N3 -n3 and mpirun -np 3 (fake
// nodes: the same namespaces) give the full 3×3 matrix, every pair inter
// and verified, with the same pairs and labels.
func TestSrunAndMpirunThreeNodes(t *testing.T) {
	c := need(t)
	l := c.run(t, 90*time.Second, nil, append([]string{"srun", "-N3", "-n3", "--label"}, c.meshArgs("srun3")...)...)
	srun := c.matrix(t, l, "srun -N3 -n3", "srun3")
	if got := slices.Sorted(maps.Keys(srun)); !slices.Equal(got, allPairs(3)) {
		t.Fatalf("srun pairs %v, want %v", got, allPairs(3))
	}
	for k, v := range srun {
		if v != "inter" {
			t.Errorf("srun pair %s is %s, want inter (one rank per node)", k, v)
		}
	}
	checkRanks(t, filepath.Join(c.dir, "srun3"), 3, "slurm")

	mpi := c.matrix(t, c.mpirun(t, 3, "mpi3"), "mpirun -np 3", "mpi3")
	if !maps.Equal(mpi, srun) {
		t.Errorf("mpirun pairs and labels %v differ from srun's %v", mpi, srun)
	}
	checkRanks(t, filepath.Join(c.dir, "mpi3"), 3, "openmpi")
}

// matrix fails the test unless the launch (what) exited 0, and returns
// the pairs of the matrix it wrote under out with their intra/inter
// labels.
func (c *cluster) matrix(t *testing.T, l launch, what, out string) map[string]string {
	t.Helper()
	if l.code != 0 {
		t.Fatalf("%s: exit %d:\n%s", what, l.code, tail(l.out, 30))
	}
	t.Logf("%s: %v", what, l.elapsed.Round(time.Millisecond))
	return pairs(t, readMatrix(t, filepath.Join(c.dir, out)), 2)
}

// mpirun runs np ranks with Open MPI over the cluster's namespaces as
// fake nodes n1..n3 (one rank per node, round robin), each with its own
// host name, orte directory and the TCP byte transport.
func (c *cluster) mpirun(t *testing.T, np int, out string) launch {
	t.Helper()
	agent := filepath.Join(c.dir, "rsh-agent.sh")
	script := fmt.Sprintf("#!/bin/bash\nh=$1; shift\nmkdir -p %[1]s/orte-$h\n"+
		"exec nsenter --net=/run/netns/%[2]s-$h unshare --uts /bin/bash -c \"hostname $h; export OMPI_MCA_orte_tmpdir_base=%[1]s/orte-$h; $*\"\n", c.dir, c.id)
	hosts := filepath.Join(c.dir, "hostfile")
	if err := os.WriteFile(agent, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(hosts, []byte("n1 slots=2\nn2 slots=2\nn3 slots=2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	argv := []string{"mpirun", "--allow-run-as-root", "--oversubscribe", "-np", strconv.Itoa(np), "--map-by", "node",
		"--hostfile", hosts, "--mca", "plm_rsh_agent", agent, "--mca", "btl", "self,tcp", "-x", "KVTIER_TOKEN"}
	argv = append(argv, c.meshArgs(out, "--coordinator", c.net+".1:29611")...)
	return c.run(t, 90*time.Second, []string{"OMPI_MCA_btl=self,tcp"}, argv...)
}

// TestSrunSixRanks: srun -N3 -n6 puts two ranks on each node: the
// matrix gains intra pairs, all verified.
func TestSrunSixRanks(t *testing.T) {
	c := need(t)
	l := c.run(t, 120*time.Second, nil, append([]string{"srun", "-N3", "-n6", "--label"}, c.meshArgs("srun6")...)...)
	got := c.matrix(t, l, "srun -N3 -n6", "srun6")
	if keys := slices.Sorted(maps.Keys(got)); !slices.Equal(keys, allPairs(6)) {
		t.Fatalf("pairs %v, want all 30", keys)
	}
	intra := 0
	for _, v := range got {
		if v == "intra" {
			intra++
		}
	}
	if intra != 6 { // two ranks on each of three nodes: 3 × 2 ordered pairs
		t.Errorf("%d intra pairs, want 6 (two ranks per node): %v", intra, got)
	}
}

// TestRendezvousNamesMissingRanks: a world size one larger than the
// ranks srun starts fails every rank within the rendezvous timeout, each
// with one line naming the missing rank, exit 2.
func TestRendezvousNamesMissingRanks(t *testing.T) {
	c := need(t)
	args := c.meshArgs("missing", "--world-size", "4", "--rendezvous-timeout", "2s")
	l := c.run(t, 60*time.Second, nil, append([]string{"srun", "-N3", "-n3", "--label"}, args...)...)
	if l.code != 2 {
		t.Fatalf("exit %d, want 2:\n%s", l.code, tail(l.out, 20))
	}
	for r := range 3 {
		line := ""
		for s := range strings.SplitSeq(l.out, "\n") {
			if strings.HasPrefix(s, fmt.Sprintf("%d: kvtier mesh: rank %d", r, r)) && strings.Contains(s, "rendezvous") {
				line = s
			}
		}
		if !strings.Contains(line, "rank(s) 3 of 4 did not join within 2s") {
			t.Errorf("rank %d: no line naming rank 3 as missing:\n%s", r, tail(l.out, 20))
		}
	}
	if l.elapsed > 15*time.Second {
		t.Errorf("ranks took %v to give up, rendezvous timeout 2s", l.elapsed)
	}
}
