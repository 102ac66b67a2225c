package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/kvtier/kvtier/results"
)

func TestInfoFixture(t *testing.T) {
	stdout, _ := mustRunCLI(t, "info", "--sys-root", "../../system/testdata/host")
	for _, want := range []string{
		"hostname   fixture-node", "os         Ubuntu 24.04.1 LTS", "kernel     6.8.0-45-generic",
		"cpu        Intel(R) Xeon(R) Platinum 8480+, 4 CPUs", "numa       2 nodes", "memory     1.97 TiB",
		"host     available", "GPUs\n", "RDMA NICs\n",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("info lacks %q:\n%s", want, stdout)
		}
	}
	code, stdout, _ := runCLI(t, "info", "--json", "--sys-root", "../../system/testdata/host")
	var m results.Manifest
	if code != exitOK || json.Unmarshal([]byte(stdout), &m) != nil {
		t.Fatalf("info --json: exit %d, %q", code, stdout)
	}
	if m.Host.CPUs != 4 || m.Host.NUMANodes != 2 || len(m.Backends) == 0 || m.Backends[0].Name != "host" {
		t.Errorf("manifest %+v", m)
	}
}
