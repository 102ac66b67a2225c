package main

import (
	"bytes"
	"strings"
	"testing"
)

// TestScriptEnvNotIgnoredSilently: KVTIER_PEER and the like, which only
// scripts/bench.sh and ./bench read, are named with the flag to give
// instead (before, kvtier sweep measured the embedded peer silently).
func TestScriptEnvNotIgnoredSilently(t *testing.T) {
	t.Parallel()
	env := map[string]string{"KVTIER_PEER": "127.0.0.1:9", "KVTIER_PRODUCER": ""}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	var b bytes.Buffer
	noteScriptEnv(&b, "sweep", nil, lookup)
	if !strings.Contains(b.String(), "KVTIER_PEER is read by scripts/bench.sh") || !strings.Contains(b.String(), "--peer") {
		t.Errorf("sweep: %q", b.String())
	}
	b.Reset()
	noteScriptEnv(&b, "probe", nil, lookup)
	noteScriptEnv(&b, "report", nil, lookup)
	noteScriptEnv(&b, "sweep", []string{"--peer", "h:1"}, lookup)
	if b.Len() != 0 {
		t.Errorf("unset or unrelated variables named: %q", b.String())
	}
}
