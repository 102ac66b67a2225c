package main

import "github.com/kvtier/kvtier/peer/peerflag"

// The tests (and the helper processes, which are this test binary) read
// the KVTIER_TEST_* fault switches, as a kvtier_testfaults build does.
func init() { peerflag.PeerFaults = peerflag.EnvFaults }
