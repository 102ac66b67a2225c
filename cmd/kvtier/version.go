package main

import (
	"runtime/debug"

	"github.com/kvtier/kvtier/harness"
)

// version says which kvtier this is, as info and every manifest say it
// (harness.Version), then the Go version it was built with.
func version() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.GoVersion != "" {
		return harness.Version() + " " + bi.GoVersion
	}
	return harness.Version()
}
