package rdmavm

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"

	"github.com/kvtier/kvtier/results"
)

// want is what the rows of a CSV the guest sent back must hold, checked
// again here with the project's own CSV reader (the guest checks with awk).
type want struct {
	file    string // as the host script names it: CASE-FILE.csv
	minRows int
	cells   map[string]string // column -> value on every row
}

var wantCSVs = []want{
	{"transfer-transfer.csv", 12, map[string]string{
		"suite": "transfer", "transport": "verbs", "device": "rxe0", "tier": "remote",
		"status": "ok", "verified": "true", "conns": "2"}},
	{"sweep-sweep.csv", 8, map[string]string{
		"suite": "sweep", "transport": "verbs", "tier": "remote", "status": "ok", "verified": "true"}},
	{"store-sweep.csv", 2, map[string]string{
		"suite": "sweep", "transport": "verbs", "tier": "remote", "direction": "store", "status": "ok", "verified": "true"}},
	{"bad_rkey-transfer.csv", 1, map[string]string{"transport": "verbs", "status": "error"}},
	{"out_of_pool-transfer.csv", 1, map[string]string{"transport": "verbs", "status": "error"}},
	{"mesh-mesh.csv", 4, map[string]string{
		"suite": "mesh", "transport": "verbs", "device": "rxe0", "status": "ok", "verified": "true", "pair": "intra"}},
}

// csvProblems re-reads the CSVs in dir that wantCSVs names and says what
// is wrong with them. A missing file is a problem unless narrowed (only
// some cases ran).
func csvProblems(dir string, narrowed bool) []string {
	var probs []string
	for _, w := range wantCSVs {
		path := filepath.Join(dir, w.file)
		if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) && narrowed {
			continue
		}
		rows, _, err := results.ReadCSV(path)
		if err != nil {
			probs = append(probs, fmt.Sprintf("%s: %v", w.file, err))
			continue
		}
		if len(rows) < w.minRows {
			probs = append(probs, fmt.Sprintf("%s: %d rows, want at least %d", w.file, len(rows), w.minRows))
		}
		for i, r := range rows {
			for _, col := range slices.Sorted(maps.Keys(w.cells)) {
				if got := r.Cell(col); got != w.cells[col] {
					probs = append(probs, fmt.Sprintf("%s row %d: %s = %q, want %q (reason %q)", w.file, i+1, col, got, w.cells[col], r.Reason))
				}
			}
			if r.Status == results.StatusOK && !(r.Seconds > 0 && r.Bytes > 0) {
				probs = append(probs, fmt.Sprintf("%s row %d: ok row with seconds %v, bytes %d", w.file, i+1, r.Seconds, r.Bytes))
			}
		}
	}
	return probs
}
