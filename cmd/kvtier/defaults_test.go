package main

import (
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/kvtier/kvtier/cli"
	"github.com/kvtier/kvtier/harness"
	"github.com/kvtier/kvtier/peer"
)

// TestSameDefaults: where the same thing is measured, the warm-up and
// the connections have one default, which each command's help gives
// with its reason. Before, --warmup was 2 in sweep and 1 in transfer and
// mesh, and --conns 4 in sweep's remote tier and 1 in transfer.
func TestSameDefaults(t *testing.T) {
	t.Parallel()
	want := map[string]int{"warmup": harness.DefaultWarmup, "conns": peer.DefaultConns}
	seen := map[string][]string{}
	for _, c := range cli.Commands() {
		if c.Name == "toy" {
			continue // a test's own suite (toysuite_test.go)
		}
		for _, hf := range helpFlags(t, c.Name) { // usage lines wrapped to the width joined
			def, ok := want[hf.name]
			if !ok {
				continue
			}
			flag := hf.name
			seen[flag] = append(seen[flag], c.Name)
			got := regexp.MustCompile(`\(default (\d+)\)$`).FindStringSubmatch(hf.usage)
			if got == nil || got[1] != strconv.Itoa(def) {
				t.Errorf("%s --%s: %q, want default %d", c.Name, flag, hf.usage, def)
			}
			if !strings.Contains(hf.usage, "one default in every command: ") {
				t.Errorf("%s --%s does not say why its default is what it is: %q", c.Name, flag, hf.usage)
			}
		}
	}
	for flag, cmds := range map[string][]string{"warmup": {"sweep", "transfer", "mesh"}, "conns": {"sweep", "transfer", "mesh"}} {
		for _, c := range cmds {
			if !strings.Contains(strings.Join(seen[flag], ","), c) {
				t.Errorf("%s has no --%s (seen in %v)", c, flag, seen[flag])
			}
		}
	}
}
