package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/kvtier/kvtier/peer/peerflag"
)

func TestMeshBadInput(t *testing.T) {
	t.Setenv(peerflag.EnvToken, "")
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"no token", []string{"--launcher", "flags", "--rank", "0", "--world-size", "2", "--coordinator", "127.0.0.1:1"}, "--token: no run token"},
		{"no world size", []string{"--token", "x", "--launcher", "flags", "--rank", "0", "--coordinator", "127.0.0.1:1"}, "--world-size: unknown"},
		{"bad pattern", []string{"--token", "x", "--launcher", "flags", "--rank", "0", "--world-size", "2", "--coordinator", "127.0.0.1:1", "--pattern", "star"}, "--pattern: want pairwise or ring"},
		{"bad coordinator", []string{"--token", "x", "--launcher", "flags", "--rank", "0", "--world-size", "2", "--coordinator", "nowhere"}, "--coordinator: \"nowhere\""},
		{"unknown launcher", []string{"--token", "x", "--launcher", "lsf"}, "--launcher: unknown launcher"},
		{"coordinator not here", []string{"--token", "x", "--launcher", "flags", "--rank", "0", "--world-size", "2", "--coordinator", "192.0.2.1:29500"}, "rank 0 cannot listen there"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			args := append([]string{"mesh", "--out", t.TempDir()}, tc.args...)
			if code := dispatch(context.Background(), &stdout, &stderr, args); code != exitUsage {
				t.Fatalf("exit %d, want %d; stderr:\n%s", code, exitUsage, stderr.String())
			}
			lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
			last := lines[len(lines)-1]
			if !strings.HasPrefix(last, "kvtier mesh: ") || !strings.Contains(last, tc.want) {
				t.Fatalf("last line %q, want one naming %q", last, tc.want)
			}
		})
	}
}

// Three ranks in this process (the flags launcher, two nodes named by
// --node): every rank exits 0, rank 0 prints mesh.csv and writes the
// matrix, the ranks' manifests and the plots.
func TestMeshInProcess(t *testing.T) {
	dir, outs, errs := meshRanks(t, []string{"a", "a", "b"}, "--sizes", "256KiB,1MiB", "--intra-peer-copy")
	if got := strings.TrimSpace(outs[0].String()); got != filepath.Join(dir, "mesh.csv") {
		t.Errorf("rank 0 printed %q, want the path of mesh.csv", got)
	}
	if !strings.Contains(errs[1].String(), "kvtier mesh: rank 1: done") {
		t.Errorf("rank 1 did not say it was done:\n%s", errs[1].String())
	}
	for _, f := range []string{"mesh.csv", "mesh_matrix.csv", "mesh_ranks.json", "mesh_summary.csv", "manifest.json",
		"plots/mesh_intra_inter.png", "plots/mesh_matrix_net_blockwise_1048576.svg"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Error(err)
		}
	}
	m, _ := os.ReadFile(filepath.Join(dir, "mesh_matrix.csv"))
	if n := strings.Count(string(m), "pairwise,net,") - strings.Count(string(m), ",inter,inter,"); n != 4 { // 0↔1 at two sizes
		t.Errorf("%d intra cells over the network in mesh_matrix.csv, want 4:\n%s", n, m)
	}
	// Without GPUs the intra pairs' peer path is a skipped cell with the
	// reason, never a number.
	if n := strings.Count(string(m), "the GPUs' peer path needs a GPU on both ranks"); n != 4 || !strings.Contains(string(m), "pairwise,peercopy,") {
		t.Errorf("%d skipped peer-copy cells, want 4 (0↔1 at two sizes):\n%s", n, m)
	}
}

// meshRanks runs a rank of kvtier mesh in this process on each of nodes
// (the flags launcher) with args, fails the test unless every rank exits
// 0, and returns the results directory and each rank's stdout and
// stderr.
func meshRanks(t *testing.T, nodes []string, args ...string) (string, []bytes.Buffer, []bytes.Buffer) {
	t.Helper()
	coord := freePort(t)
	dir := filepath.Join(t.TempDir(), "out")
	codes := make([]int, len(nodes))
	outs := make([]bytes.Buffer, len(nodes))
	errs := make([]bytes.Buffer, len(nodes))
	var wg sync.WaitGroup
	for r := range nodes {
		wg.Go(func() {
			a := append([]string{"mesh", "--token", "tok", "--launcher", "flags", "--rank", fmt.Sprint(r), "--world-size", fmt.Sprint(len(nodes)),
				"--node", nodes[r], "--coordinator", coord, "--reps", "2", "--out", dir, "--rendezvous-timeout", "20s"}, args...)
			codes[r] = dispatch(context.Background(), &outs[r], &errs[r], a)
		})
	}
	wg.Wait()
	for r, code := range codes {
		if code != exitOK {
			t.Fatalf("rank %d: exit %d:\n%s", r, code, errs[r].String())
		}
	}
	return dir, outs, errs
}

// --direction load,store: both ranks' pools accept writes, every pair
// is measured both ways, stores verified, and the matrix and plots have
// cells of each.
func TestMeshInProcessStores(t *testing.T) {
	dir, _, _ := meshRanks(t, []string{"a", "b"}, "--sizes", "256KiB", "--direction", "load,store")
	m, _ := os.ReadFile(filepath.Join(dir, "mesh_matrix.csv"))
	for _, cell := range []string{"pairwise,net,load,blockwise,262144,0,1,", "pairwise,net,load,blockwise,262144,1,0,",
		"pairwise,net,store,blockwise,262144,0,1,", "pairwise,net,store,blockwise,262144,1,0,"} {
		line := ""
		for l := range strings.SplitSeq(string(m), "\n") {
			if strings.HasPrefix(l, cell) {
				line = l
			}
		}
		if !strings.Contains(line, ",2,") || !strings.Contains(line, ",true,0,0,") {
			t.Errorf("cell %s: %q, want 2 ok verified reps:\n%s", cell, line, m)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "plots/mesh_matrix_net_store_blockwise_262144.svg")); err != nil {
		t.Error(err)
	}
}
