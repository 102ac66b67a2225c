// Package suites brings in every kvtier suite: importing it registers
// each suite's results schema, command, report section and figures. It is
// the one list of suites; adding a suite is its own package plus one
// line here, and every program that needs them all (the kvtier command,
// the columns page generator) imports this package.
package suites

import (
	_ "github.com/kvtier/kvtier/harness/knee"     // kvtier knee
	_ "github.com/kvtier/kvtier/harness/mb1"      // kvtier interfere
	_ "github.com/kvtier/kvtier/harness/mesh"     // kvtier mesh
	_ "github.com/kvtier/kvtier/harness/probe"    // kvtier probe
	_ "github.com/kvtier/kvtier/harness/replay"   // kvtier replay
	_ "github.com/kvtier/kvtier/harness/sweep"    // kvtier sweep
	_ "github.com/kvtier/kvtier/harness/trace"    // kvtier trace and plan
	_ "github.com/kvtier/kvtier/harness/transfer" // kvtier transfer
)
