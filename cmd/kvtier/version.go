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

// didYouMean returns ` (did you mean "x"?)` for the candidate nearest to
// s by edit distance, when it is near enough to be a typo (at most a
// third of s's letters, at least one, wrong); else "".
func didYouMean(s string, candidates []string) string {
	best, bestD := "", max(1, len(s)/3)+1
	for _, c := range candidates {
		if d := editDistance(s, c); d < bestD {
			best, bestD = c, d
		}
	}
	if best == "" {
		return ""
	}
	return ` (did you mean "` + best + `"?)`
}

// editDistance is the Levenshtein distance between a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
