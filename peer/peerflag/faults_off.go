//go:build !kvtier_testfaults

package peerflag

import "github.com/kvtier/kvtier/peer"

// buildFaults: the shipped binary injects no faults, whatever the
// environment says.
func buildFaults(func(string) string) peer.Faults { return peer.Faults{} }
