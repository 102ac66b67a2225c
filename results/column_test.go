package results

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// An integer column is written in decimal digits whatever the value was
// set as: a float64 count of bytes or tokens (a Prometheus counter's
// delta, bytes × a ratio) must not reach the file as 3.7748736e+09,
// which DuckDB and pandas read as a float.
func TestIntColumnWrittenAsInteger(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "x.csv")
	cols := append(CommonSchema[:0:0], CommonSchema...)
	cols = append(cols, Int("kv_bytes", "B", "bytes"), Float("ratio", "fraction", "a share"), Int("half", "count", "not integral"))
	w, err := OpenSchema(path, cols)
	if err != nil {
		t.Fatal(err)
	}
	r := NewRow("trace")
	r.Status = StatusOK
	r.Set("kv_bytes", 3.7748736e9)
	r.Set("ratio", 1e-7)
	r.Set("half", 2.5)
	if err := w.Write(r); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	line := strings.Split(strings.TrimSpace(string(b)), "\n")[1]
	if !strings.HasSuffix(line, ",3774873600,1e-07,2.5") {
		t.Errorf("row = %q, want kv_bytes 3774873600, ratio as set, a fractional value kept", line)
	}
}

func TestColumnFormat(t *testing.T) {
	t.Parallel()
	c := Int("n", "count", "n")
	for in, want := range map[string]string{
		"": "", "12": "12", "-3": "-3", "3.7748736e+09": "3774873600", "1e+06": "1000000",
		"2.5": "2.5", "inf": "inf", "x": "x", "9.3e+18": "9.3e+18",
	} {
		if got := c.Format(in); got != want {
			t.Errorf("Format(%q) = %q, want %q", in, got, want)
		}
	}
	if got := Float("f", "s", "f").Format("1e+06"); got != "1e+06" {
		t.Errorf("a float column's cell changed: %q", got)
	}
}

// Readers take integers in either form: results written before integer
// columns were typed hold some as floats.
func TestRowInt(t *testing.T) {
	t.Parallel()
	r := Row{Bytes: 4096, Extra: map[string]string{"kv_bytes": "3.7748736e+09", "n": "7", "f": "0.5", "e": ""}}
	for _, c := range []struct {
		col  string
		want int64
		ok   bool
	}{{"kv_bytes", 3774873600, true}, {"n", 7, true}, {"f", 0, false}, {"e", 0, false}, {"absent", 0, false}, {ColBytes, 4096, true}} {
		if got, ok := r.Int(c.col); got != c.want || ok != c.ok {
			t.Errorf("Int(%s) = %d, %v; want %d, %v", c.col, got, ok, c.want, c.ok)
		}
	}
	if r.Float(ColBytes) != 4096 || r.Get(ColBytes) != "4096" {
		t.Errorf("common columns not read by name: %v %q", r.Float(ColBytes), r.Get(ColBytes))
	}
}

func TestColumnCheck(t *testing.T) {
	t.Parallel()
	for _, c := range CommonSchema {
		if err := c.Check(); err != nil {
			t.Error(err)
		}
	}
	for _, bad := range []Column{
		{}, {Name: "x", Type: "num", Doc: "d"}, Float("x", "Gb/s", "d"), Text("x", ""), Text("x", "two\nlines"),
	} {
		if bad.Check() == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
}

// Floats reach the CSV in positional digits, so an integral value (tokens,
// bytes per second) reads as an integer; exponent form only at the extremes.
func TestFormatValueFloat(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		in   float64
		want string
	}{
		{1154048, "1154048"}, {3.7748736e9, "3774873600"}, {1e6, "1000000"}, {2.5e9 + 0.25, "2500000000.25"},
		{0.5, "0.5"}, {0, "0"}, {-1200, "-1200"}, {1e-7, "1e-07"}, {0.0001, "0.0001"}, {1e21, "1e+21"},
	} {
		if got := FormatValue(c.in); got != c.want {
			t.Errorf("FormatValue(%v) = %q, want %q", c.in, got, c.want)
		}
	}
}
