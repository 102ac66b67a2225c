package analysis_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kvtier/kvtier/analysis"
	"github.com/kvtier/kvtier/harness/mb1"
	_ "github.com/kvtier/kvtier/harness/probe" // registers probe.csv
	"github.com/kvtier/kvtier/results"
)

func TestReadTokensRefusesMalformedCounts(t *testing.T) {
	t.Parallel()
	header := strings.Join(results.Names(mb1.TokenColumns), ",")
	for _, tt := range []struct {
		name, row, wantErr string
	}{
		{"ok", "mb1,http://x,interfere,8,2048,0,3,17,1.5,1,1.2", ""},
		{"bad stream", "mb1,http://x,interfere,8,2048,0,x,17,1.5,1,1.2", `stream "x" is not an integer`},
		{"empty index", "mb1,http://x,interfere,8,2048,0,3,,1.5,1,1.2", `index "" is not an integer`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, mb1.TokensFile)
			if err := os.WriteFile(path, []byte(header+"\n"+tt.row+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			run, err := analysis.Load(dir)
			var toks []analysis.Token
			if run != nil {
				toks = run.Tokens
			}
			if tt.wantErr == "" {
				if err != nil || len(toks) != 1 || toks[0].D != 8 || toks[0].P != 2048 || toks[0].Stream != 3 || toks[0].Index != 17 {
					t.Fatalf("tokens %+v, err %v", toks, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("err %v, want %q", err, tt.wantErr)
			}
		})
	}
}

// One malformed row in the middle of a CSV is left out and said; the rows
// after it stay (it is not taken for a file cut short).
func TestLoadKeepsRowsAfterAMalformedOne(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	hdr := strings.Join(append(append([]string{}, results.CommonColumns...), "ttft_s"), ",")
	row := func(rep string) string {
		return "probe,http,http,gpu,,m,1024,,,," + rep + ",0.05,,ok,,0.05"
	}
	data := strings.Join([]string{hdr, row("0"), "probe,http,\"broken", row("2"), row("3")}, "\n") + "\n"
	if err := os.WriteFile(filepath.Join(dir, "probe.csv"), []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	run, err := analysis.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(run.Rows("probe")); n != 3 {
		t.Errorf("%d rows, want the 3 around the malformed line", n)
	}
	if w := strings.Join(run.Warnings, "\n"); !strings.Contains(w, "1 malformed line(s) left out; line 3") {
		t.Errorf("warnings %q do not name the malformed line", w)
	}
}
