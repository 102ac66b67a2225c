package rdmavm

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kvtier/kvtier/harness/mesh"
	"github.com/kvtier/kvtier/harness/sweep"
	"github.com/kvtier/kvtier/harness/transfer"
	"github.com/kvtier/kvtier/results"
)

// transferRow is a row as kvtier transfer writes it over rxe0.
func transferRow(rep int) results.Row {
	r := results.NewRow("transfer")
	r.Backend, r.Transport, r.Tier, r.Layout = "host", "verbs", "remote", "layerwise"
	r.Bytes, r.Rep = 1<<20, rep
	r.SetTime(0.03)
	r.Set("device", "rxe0")
	r.Set("conns", 2)
	r.Set("verified", true)
	return r
}

func sweepRow(rep int) results.Row {
	r := results.NewRow("sweep")
	r.Backend, r.Transport, r.Tier, r.Layout = "host", "verbs", "remote", "blockwise"
	r.Bytes, r.Rep = 6<<20, rep
	r.SetTime(0.2)
	r.Set("verified", true)
	return r
}

// storeRow is a row of the remote tier's sweep --direction store.
func storeRow(rep int) results.Row {
	r := sweepRow(rep)
	r.Set(results.DirectionColumn, "store")
	return r
}

func errorRow() results.Row {
	r := transferRow(0)
	r.Fail(errors.New(`peer 127.0.0.1:7471: rdma: read: work request 0 (qp 0, "x") failed: remote access error (status 10)`))
	r.Set("verified", "")
	return r
}

func writeCSV(t *testing.T, path string, extra []string, rows []results.Row) {
	t.Helper()
	w, err := results.CreateCSV(path, extra...)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		if err := w.Write(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

func repeat(n int, f func(int) results.Row) []results.Row {
	var rows []results.Row
	for i := range n {
		rows = append(rows, f(i))
	}
	return rows
}

// goodSet writes the CSVs of a passing run into dir.
func goodSet(t *testing.T, dir string) {
	writeCSV(t, filepath.Join(dir, "transfer-transfer.csv"), transfer.Suite.Main().Names(), repeat(12, transferRow))
	writeCSV(t, filepath.Join(dir, "sweep-sweep.csv"), sweep.Suite.Main().Names(), repeat(8, sweepRow))
	writeCSV(t, filepath.Join(dir, "store-sweep.csv"), sweep.Suite.Main().Names(), repeat(2, storeRow))
	writeCSV(t, filepath.Join(dir, "bad_rkey-transfer.csv"), transfer.Suite.Main().Names(), []results.Row{errorRow()})
	writeCSV(t, filepath.Join(dir, "out_of_pool-transfer.csv"), transfer.Suite.Main().Names(), []results.Row{errorRow()})
	writeCSV(t, filepath.Join(dir, "mesh-mesh.csv"), mesh.Suite.Main().Names(), repeat(8, meshRow))
}

// meshRow is a row as a two-rank kvtier mesh writes it over rxe0.
func meshRow(rep int) results.Row {
	r := transferRow(rep)
	r.Suite = "mesh"
	r.Set("pair", "intra")
	return r
}

func TestCSVProblems(t *testing.T) {
	tests := []struct {
		name     string
		narrowed bool
		spoil    func(t *testing.T, dir string)
		want     string // substring of a problem; "" for none
	}{
		{"good run", false, func(*testing.T, string) {}, ""},
		{"unverified row", false, func(t *testing.T, dir string) {
			rows := repeat(12, transferRow)
			rows[5].Set("verified", false)
			writeCSV(t, filepath.Join(dir, "transfer-transfer.csv"), transfer.Suite.Main().Names(), rows)
		}, `row 6: verified = "false"`},
		{"tcp fallback", false, func(t *testing.T, dir string) {
			rows := repeat(12, transferRow)
			for i := range rows {
				rows[i].Set("device", "tcp")
			}
			writeCSV(t, filepath.Join(dir, "transfer-transfer.csv"), transfer.Suite.Main().Names(), rows)
		}, `device = "tcp"`},
		{"too few rows", false, func(t *testing.T, dir string) {
			writeCSV(t, filepath.Join(dir, "sweep-sweep.csv"), sweep.Suite.Main().Names(), repeat(3, sweepRow))
		}, "3 rows, want at least 8"},
		{"refused read measured", false, func(t *testing.T, dir string) {
			writeCSV(t, filepath.Join(dir, "bad_rkey-transfer.csv"), transfer.Suite.Main().Names(), []results.Row{transferRow(0)})
		}, `status = "ok", want "error"`},
		{"ok row without a time", false, func(t *testing.T, dir string) {
			rows := repeat(8, sweepRow)
			rows[0].Seconds = 0
			writeCSV(t, filepath.Join(dir, "sweep-sweep.csv"), sweep.Suite.Main().Names(), rows)
		}, "ok row with seconds 0"},
		{"missing file", false, func(t *testing.T, dir string) {
			os.Remove(filepath.Join(dir, "sweep-sweep.csv"))
		}, "sweep-sweep.csv"},
		{"missing file, cases narrowed", true, func(t *testing.T, dir string) {
			os.Remove(filepath.Join(dir, "sweep-sweep.csv"))
		}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			goodSet(t, dir)
			tc.spoil(t, dir)
			probs := csvProblems(dir, tc.narrowed)
			if tc.want == "" {
				if len(probs) != 0 {
					t.Fatalf("problems in a good run: %q", probs)
				}
				return
			}
			if !strings.Contains(strings.Join(probs, "\n"), tc.want) {
				t.Fatalf("problems %q, want one containing %q", probs, tc.want)
			}
		})
	}
}

// TestGuestCSVCheck runs the guest's checker (scripts/rxe-vm/csvcheck.awk)
// with the awk the guest has (busybox) on CSVs written by the results
// package, so a checker that passes everything is caught here.
func TestGuestCSVCheck(t *testing.T) {
	awk := []string{"busybox", "awk"}
	if _, err := exec.LookPath("busybox"); err != nil {
		if _, err := exec.LookPath("awk"); err != nil {
			t.Skip("rdmavm: neither busybox nor awk to run csvcheck.awk")
		}
		awk = []string{"awk"}
	}
	checker, err := filepath.Abs(filepath.Join("..", "scripts", "rxe-vm", "csvcheck.awk"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	good := filepath.Join(dir, "good.csv")
	writeCSV(t, good, transfer.Suite.Main().Names(), repeat(4, transferRow))
	mixed := filepath.Join(dir, "mixed.csv")
	writeCSV(t, mixed, transfer.Suite.Main().Names(), append(repeat(2, transferRow), errorRow()))

	tests := []struct {
		name string
		file string
		vars []string
		ok   bool
		out  string
	}{
		{"all ok", good, []string{"all=status=ok,verified=true,transport=verbs,device=rxe0", "min=4"}, true, "4 rows"},
		{"too few", good, []string{"all=status=ok", "min=5"}, false, "want at least 5"},
		{"wrong device", good, []string{"all=device=mlx5_0", "min=1"}, false, "device=rxe0"},
		{"no such column", good, []string{"all=nope=1", "min=1"}, false, "no such column"},
		{"error row fails all", mixed, []string{"all=status=ok,verified=true", "min=1"}, false, "row 3: status=error"},
		{"quoted reason kept whole", mixed, []string{"all=status=ok", "min=1"}, false, `"x") failed: remote access error`},
		{"any error", mixed, []string{"any=status=error"}, true, "1 of 3 rows"},
		{"any error, none", good, []string{"any=status=error"}, false, "none with"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			args := append(awk[1:], "-f", checker)
			for _, v := range tc.vars {
				args = append(args, "-v", v)
			}
			out, err := exec.Command(awk[0], append(args, tc.file)...).CombinedOutput()
			if ok := err == nil; ok != tc.ok {
				t.Fatalf("exit ok=%v, want %v: %s", ok, tc.ok, out)
			}
			if !strings.Contains(string(out), tc.out) {
				t.Fatalf("output %q, want it to contain %q", out, tc.out)
			}
		})
	}
}
