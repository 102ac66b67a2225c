package main

import (
	"runtime/debug"
	"strings"

	"github.com/kvtier/kvtier/harness"
)

// version says which kvtier this is: the module version the build
// recorded (a tag, or a pseudo-version such as
// v0.0.0-20261201195234-5e640eda1d81 for `go install ...@latest`, which
// holds the revision), then the VCS revision where the toolchain or
// make build stamped one, and the Go version.
func version() string {
	mod := "(devel)"
	goVersion := ""
	if bi, ok := debug.ReadBuildInfo(); ok {
		if bi.Main.Version != "" {
			mod = bi.Main.Version
		}
		goVersion = bi.GoVersion
	}
	parts := []string{mod}
	if rev := harness.Version(); rev != "unknown" && !strings.Contains(mod, shortRev(rev)) {
		parts = append(parts, "revision "+rev)
	}
	if goVersion != "" {
		parts = append(parts, goVersion)
	}
	return strings.Join(parts, " ")
}

// shortRev is the 12-character prefix of a revision a pseudo-version
// carries.
func shortRev(rev string) string {
	if len(rev) > 12 {
		return rev[:12]
	}
	return rev
}
