package tierflag

import (
	"io"
	"os"
	"path/filepath"
	"strings"
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

// A --numa node the machine does not have is refused, naming how many
// it has; where sysfs says nothing the node is left to the backend.
func TestNUMANodeExists(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	for _, n := range []string{"node0", "node1"} {
		if err := os.MkdirAll(filepath.Join(root, "sys/devices/system/node", n), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		root string
		numa int
		want string
	}{
		{root, 1, ""}, {root, -1, ""}, {root, tiers.NUMAAuto, ""},
		{root, 7, "numa: this machine has no NUMA node 7 (it has 2"},
		{t.TempDir(), 7, ""}, // no sysfs to say
	} {
		f := BackendFlags{Name: "auto", NUMA: c.numa, Root: c.root}
		err := f.Validate()
		if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("--numa %d: %v, want %q", c.numa, err, c.want)
		}
	}
}
