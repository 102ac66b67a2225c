//go:build linux

package meshcluster

import (
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/kvtier/kvtier/harness/mesh"
)

// TestHostlistMatchesScontrol checks kvtier's hostlist parser against
// `scontrol show hostnames` of the test cluster's Slurm: the same hosts
// in the same order where scontrol accepts a list, an error where it
// calls it invalid, except a suffix after the last bracket group, which
// newer Slurm accepts and kvtier does too.
func TestHostlistMatchesScontrol(t *testing.T) {
	c := need(t)
	lists := []string{
		"n[1-3]", "n[1-3,7]", "n[009-011]", "n[8-12]", "n[01-3]", "n[1-03]", "n[5]",
		"rack[1-2]-n[01-03]", "a[1-2]b[3-4],c", "n1,n1", "a,,b", "n[1-2],", "n[1-2] m[3]",
		"gpu-node-[001-004],login1", "n[3-1]", "n[]", "n[1,,2]", "n[-2]", "x[0-1]y[a]",
		"n[1-2]]", "n[1-2]x,y[5]", "gpu[01-04]-ib",
	}
	suffix := map[string][]string{
		"n[1-2]x,y[5]":  {"n1x", "n2x", "y5"},
		"gpu[01-04]-ib": {"gpu01-ib", "gpu02-ib", "gpu03-ib", "gpu04-ib"},
	}
	for _, list := range lists {
		cmd := exec.Command("scontrol", "show", "hostnames", list)
		cmd.Env = append(os.Environ(), "SLURM_CONF="+c.conf)
		out, _ := cmd.CombinedOutput()
		invalid := strings.Contains(string(out), "Invalid hostlist")
		got, err := mesh.ExpandHostlist(list)
		switch {
		case suffix[list] != nil:
			if !invalid {
				t.Logf("%q: this scontrol accepts a suffix now: %q", list, out)
			}
			if err != nil || !slices.Equal(got, suffix[list]) {
				t.Errorf("%q: got %v, %v; want %v", list, got, err, suffix[list])
			}
		case invalid:
			if err == nil {
				t.Errorf("%q: scontrol calls it invalid, kvtier expands it to %v", list, got)
			}
		default:
			want := strings.Fields(string(out))
			if err != nil || !slices.Equal(got, want) {
				t.Errorf("%q: got %v, %v; scontrol says %v", list, got, err, want)
			}
		}
	}
}
