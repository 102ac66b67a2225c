package results

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const hdr = "suite,backend,transport,tier,layout,model,prefix_tokens,blocks,chunk_bytes,bytes,rep,seconds,gbps,status,reason\n"

func row(rep string) string {
	return "sweep,host,memcpy,host,layerwise,m,1024,64,16384,1024," + rep + ",0.5,2,ok,\n"
}

func TestParseTable(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		data      string
		reps      []int
		cut       bool
		malformed []int // line numbers
	}{
		{"clean", hdr + row("0") + row("1"), []int{0, 1}, false, nil},
		{"cut short mid-row", hdr + row("0") + "sweep,host,mem", []int{0}, true, nil},
		{"cut short in a quote", hdr + row("0") + `sweep,host,memcpy,host,layerwise,m,1,1,1,1,1,,,error,"peer`, []int{0}, true, nil},
		{"short row in the middle", hdr + row("0") + "sweep,host\n" + row("2"), []int{0, 2}, false, []int{3}},
		{"stray quote in the middle", hdr + row("0") + "sweep,\"host,x\n" + row("2") + row("3"), []int{0, 2, 3}, false, []int{3}},
		{"bad number in the middle", hdr + row("0") + strings.Replace(row("1"), "0.5", "fast", 1) + row("2"), []int{0, 2}, false, []int{3}},
		{"malformed last line with newline", hdr + row("0") + "x,y\n", []int{0}, false, []int{3}},
		// A common column holds no negative or infinite count, size or
		// time: a corrupt CSV's line is malformed, not a figure.
		{"negative seconds", hdr + row("0") + strings.Replace(row("1"), "0.5", "-1", 1) + row("2"), []int{0, 2}, false, []int{3}},
		{"infinite seconds", hdr + row("0") + strings.Replace(row("1"), "0.5", "+Inf", 1) + row("2"), []int{0, 2}, false, []int{3}},
		{"negative rep", hdr + row("0") + row("-1") + row("2"), []int{0, 2}, false, []int{3}},
		{"quoted newline in a reason", hdr + strings.Replace(row("0"), "ok,", "error,\"a\nb\"", 1) + row("1"), []int{0, 1}, false, nil},
	} {
		tab, err := ParseTable([]byte(tc.data), tc.name)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		var reps []int
		for _, r := range tab.Rows {
			reps = append(reps, r.Rep)
		}
		var lines []int
		for _, e := range tab.Malformed {
			lines = append(lines, e.Line)
		}
		if !equal(reps, tc.reps) || tab.CutShort != tc.cut || !equal(lines, tc.malformed) {
			t.Errorf("%s: reps %v cut %v malformed %v (%s), want %v %v %v", tc.name, reps, tab.CutShort, lines, tab.Problems(), tc.reps, tc.cut, tc.malformed)
		}
	}
}

func equal(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestReadTableCorrupt(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for name, data := range map[string]string{"empty.csv": "", "binary.csv": "\x00\x01\x02\xff\n\x00", "dup.csv": "a,b,a\n1,2,3\n"} {
		p := filepath.Join(dir, name)
		os.WriteFile(p, []byte(data), 0o644)
		if _, err := ReadTable(p); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), name) {
			t.Errorf("%s: %v, want a corrupt-file error naming it", name, err)
		}
	}
	if _, err := ReadTable("/dev/zero"); !errors.Is(err, ErrCorrupt) {
		t.Errorf("/dev/zero: %v, want corrupt (not a regular file)", err)
	}
}
