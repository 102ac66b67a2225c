package tierflag

import (
	"io"
	"testing"

	"github.com/kvtier/kvtier/cli"
	"github.com/kvtier/kvtier/tiers"
)

// TestNUMAFlag: --numa takes auto (the default), -1 or a node, and
// refuses anything else.
func TestNUMAFlag(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		v    string
		want int
		ok   bool
	}{{"auto", -2, true}, {"-1", -1, true}, {"3", 3, true}, {"-2", 0, false}, {"near", 0, false}, {"1024", 0, false}} {
		var n NUMAFlag
		err := n.Set(c.v)
		if (err == nil) != c.ok || c.ok && int(n) != c.want {
			t.Errorf("--numa %s: %d, %v", c.v, n, err)
		}
	}
	var f BackendFlags
	fs := cli.NewFlagSet("x", "", io.Discard)
	f.Add(fs)
	if f.NUMA != tiers.NUMAAuto || fs.Lookup("numa").DefValue != "auto" {
		t.Errorf("--numa defaults to %d (%s), want auto", f.NUMA, fs.Lookup("numa").DefValue)
	}
}
