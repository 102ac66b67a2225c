package main

import "github.com/kvtier/kvtier/cli"

// The tests (and the helper processes, which are this test binary) read
// the KVTIER_TEST_* fault switches, as a kvtier_testfaults build does.
func init() { cli.PeerFaults = cli.EnvFaults }
