//go:build !kvtier_testfaults

package main

import "github.com/kvtier/kvtier/peer"

// buildFaults: the shipped binary injects no faults, whatever the
// environment says.
func buildFaults() peer.Faults { return peer.Faults{} }
