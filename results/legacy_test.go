package results

import (
	"strings"
	"testing"
)

// TestLegacyColumnNames: results written before the units were in the
// column names (gbps held GB/s, which NIC users read as Gb/s; line_gbps
// and link_gbps too) read as today's gb_per_s, line_gb_per_s,
// link_gb_per_s, so report, plot and compare read old runs.
func TestLegacyColumnNames(t *testing.T) {
	t.Parallel()
	old := "suite,backend,transport,tier,layout,model,prefix_tokens,blocks,chunk_bytes,bytes,rep,seconds,gbps,status,reason,line_gbps,link_gbps\n" +
		"transfer,host,tcp,remote,contiguous,m,,,,16777216,0,0.01,1.6777216,ok,,25,53.2\n"
	tab, err := ParseTable([]byte(old), "old.csv")
	if err != nil {
		t.Fatal(err)
	}
	r := tab.Rows[0]
	if r.GBps != 1.6777216 || r.Float("line_gb_per_s") != 25 || r.Float("link_gb_per_s") != 53.2 || r.Cell("gb_per_s") != "1.6777216" {
		t.Errorf("old names not read as new: %+v", r)
	}
	if tab.Header[12] != "gb_per_s" {
		t.Errorf("header = %q", tab.Header)
	}
	if CommonColumns[12] != "gb_per_s" {
		t.Errorf("rows are written under %q, a name NIC users read as Gb/s", CommonColumns[12])
	}
}

// A file with both an old column and today's name of it (gbps beside
// gb_per_s: a hand-merged or edited file) reads a row whose two agree,
// and lists a row whose two disagree as malformed, naming both, rather
// than reading one of them without a word.
func TestLegacyColumnTwins(t *testing.T) {
	t.Parallel()
	data := strings.Join(CommonColumns, ",") + ",gbps\n" +
		"transfer,host,tcp,remote,contiguous,m,,,,16777216,0,0.01,1.6777216,ok,,1.677721600000001\n" +
		"transfer,host,tcp,remote,contiguous,m,,,,16777216,1,0.01,1.6777216,ok,,16.777216\n" +
		"transfer,host,tcp,remote,contiguous,m,,,,16777216,2,0.01,1.6777216,ok,,\n"
	tab, err := ParseTable([]byte(data), "both.csv")
	if err != nil {
		t.Fatal(err)
	}
	if len(tab.Rows) != 2 || len(tab.Malformed) != 1 || tab.Malformed[0].Line != 3 ||
		!strings.Contains(tab.Problems(), "gbps 16.777216 and gb_per_s 1.6777216 disagree") {
		t.Errorf("rows %d, problems %q", len(tab.Rows), tab.Problems())
	}
}

// Integers an older kvtier wrote in float form (kv_bytes 3.7748736e+09,
// a counter's delta 1.2e+06) read as the integers they are, in the
// common columns and in the columns the file's suite declares integer;
// a float column's cell is left as it was written.
func TestLegacyFloatFormIntegers(t *testing.T) {
	t.Parallel()
	RegisterSuite(Suite{Name: "legacyints", Files: []File{
		{Name: "legacyints.csv", Columns: []Column{Int("kv_bytes", "B", "bytes"), Float("ratio", "fraction", "a share")}},
	}})
	old := strings.Join(CommonColumns, ",") + ",kv_bytes,ratio\n" +
		"legacyints,host,memcpy,host,,m,,,,3.7748736e+09,0,0.5,,ok,,3.7748736e+09,1e+06\n"
	for _, name := range []string{"dir/legacyints.csv", "vm-legacyints.csv"} {
		tab, err := ParseTable([]byte(old), name)
		if err != nil {
			t.Fatal(err)
		}
		if len(tab.Rows) != 1 {
			t.Fatalf("%s: rows %d, malformed %v", name, len(tab.Rows), tab.Malformed)
		}
		r := tab.Rows[0]
		if r.Bytes != 3774873600 || r.Get("kv_bytes") != "3774873600" || r.Get("ratio") != "1e+06" {
			t.Errorf("%s: bytes %d, kv_bytes %q, ratio %q", name, r.Bytes, r.Get("kv_bytes"), r.Get("ratio"))
		}
	}
}
