package diskio

import (
	"strings"
	"testing"
)

func TestWriteIOLog(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	if err := WriteIOLog(&b, "/d/f", true, []Op{{Off: 32768, Len: 16384}, {Off: 0, Len: 4096}}); err != nil {
		t.Fatal(err)
	}
	want := "fio version 2 iolog\n/d/f add\n/d/f open\n/d/f write 32768 16384\n/d/f write 0 4096\n/d/f close\n"
	if b.String() != want {
		t.Errorf("iolog:\n%s\nwant:\n%s", b.String(), want)
	}
	for _, bad := range []struct {
		file string
		ops  []Op
	}{{"/a b", nil}, {"", nil}, {"/f", []Op{{Off: 0, Len: 0}}}} {
		if err := WriteIOLog(&strings.Builder{}, bad.file, false, bad.ops); err == nil {
			t.Errorf("WriteIOLog(%q, %v) accepted", bad.file, bad.ops)
		}
	}
}
