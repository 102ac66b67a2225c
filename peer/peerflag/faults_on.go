//go:build kvtier_testfaults

package peerflag

import "github.com/kvtier/kvtier/peer"

// buildFaults: a binary built with -tags kvtier_testfaults (the soft-RoCE
// VM test's) reads the KVTIER_TEST_* fault switches.
func buildFaults(getenv func(string) string) peer.Faults { return EnvFaults(getenv) }
