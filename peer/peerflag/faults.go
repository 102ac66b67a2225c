package peerflag

import "github.com/kvtier/kvtier/peer"

// PeerFaults returns the test-only fault switches, reading the
// environment with getenv: none in the shipped binary; the KVTIER_TEST_*
// environment variables in a binary built with -tags kvtier_testfaults
// (the soft-RoCE VM test's) and in the tests that set it to EnvFaults.
var PeerFaults = buildFaults

// EnvFaults reads the test-only fault switches from the environment.
func EnvFaults(getenv func(string) string) peer.Faults {
	return peer.Faults{
		CorruptRKey: getenv(peer.EnvCorruptRKey) != "",
		SkipBounds:  getenv(peer.EnvSkipBounds) != "",
		OutOfPool:   getenv(peer.EnvOutOfPool) != "",
	}
}
