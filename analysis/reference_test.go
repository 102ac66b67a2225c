package analysis

import (
	"math"
	"os"
	"strconv"
	"strings"
	"testing"
)

// docTables returns the rows of the markdown tables of docs/reference.md by
// the title of the "## " section holding them, each cell a number (its
// thousands separators and units "k", "x", "%" and " s" dropped).
func docTables(t *testing.T) map[string][][]float64 {
	t.Helper()
	b, err := os.ReadFile("../docs/reference.md")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][][]float64{}
	section := ""
	for line := range strings.SplitSeq(string(b), "\n") {
		if title, ok := strings.CutPrefix(line, "## "); ok {
			section = title
			continue
		}
		if !strings.HasPrefix(line, "|") || strings.Contains(line, "--") {
			continue
		}
		var row []float64
		for cell := range strings.SplitSeq(strings.Trim(line, "| "), "|") {
			c := strings.NewReplacer(",", "", "k", "", "x", "", "%", "", " s", "").Replace(cell)
			v, err := strconv.ParseFloat(strings.TrimSpace(c), 64)
			if err != nil {
				row = nil // a header
				break
			}
			row = append(row, v)
		}
		if row != nil {
			out[section] = append(out[section], row)
		}
	}
	return out
}

// section returns the table of the section whose title starts with prefix.
func section(t *testing.T, tables map[string][][]float64, prefix string) [][]float64 {
	t.Helper()
	for title, rows := range tables {
		if strings.HasPrefix(title, prefix) {
			return rows
		}
	}
	t.Fatalf("docs/reference.md has no table under a section %q", prefix)
	return nil
}

// same reports whether the Go figures equal the page's, as printed.
func same(got []float64, want []float64) bool {
	if len(got) != len(want) {
		return false
	}
	for i := range got {
		if math.Abs(got[i]-want[i]) > 1e-9*math.Max(1, math.Abs(want[i])) {
			return false
		}
	}
	return true
}

// The reference tables the code and the tests read are those of
// docs/reference.md, the page users read.
func TestReferenceMatchesDocs(t *testing.T) {
	t.Parallel()
	tables := docTables(t)
	ttft := section(t, tables, "Four-tier TTFT")
	if len(ttft) != len(ReferenceTTFT) {
		t.Errorf("four-tier TTFT: %d rows in docs, %d in ReferenceTTFT", len(ttft), len(ReferenceTTFT))
	}
	for i := range min(len(ttft), len(ReferenceTTFT)) {
		r := ReferenceTTFT[i]
		if got := []float64{float64(r.L) / 1024, r.Miss, r.Remote, r.CPU, r.GPU}; !same(got, ttft[i]) {
			t.Errorf("four-tier TTFT row %d: ReferenceTTFT %v, docs %v", i, got, ttft[i])
		}
	}
	mb1 := section(t, tables, "MB1")
	if len(mb1) != len(ReferenceMB1) {
		t.Errorf("MB1: %d rows in docs, %d in ReferenceMB1", len(mb1), len(ReferenceMB1))
	}
	for i := range min(len(mb1), len(ReferenceMB1)) {
		c := ReferenceMB1[i]
		got := []float64{float64(c.D), float64(c.P), 1e3 * c.BaseTPOT, 1e3 * c.PrefillTTFT, c.PerStream, 1e3 * c.EffTPOT, c.Penalty}
		if !same(got, mb1[i][:len(got)]) {
			t.Errorf("MB1 row %d: ReferenceMB1 %v, docs %v", i, got, mb1[i])
		}
	}
	knee := section(t, tables, "Capacity knee")
	if len(knee) != len(ReferenceKnee) {
		t.Errorf("knee: %d rows in docs, %d in ReferenceKnee", len(knee), len(ReferenceKnee))
	}
	for i := range min(len(knee), len(ReferenceKnee)) {
		k := ReferenceKnee[i]
		if got := []float64{k.GB, 100 * k.APC, k.TTFTP90}; !same(got, knee[i]) {
			t.Errorf("knee row %d: ReferenceKnee %v, docs %v", i, got, knee[i])
		}
	}
}
