package layers

import (
	"testing"
)

// suiteNames are the suites kvtier has; report, plots and analysis name
// none of them.
var suiteNames = []string{"sweep", "transfer", "mesh", "probe", "mb1", "interfere", "trace", "plan", "replay", "knee"}

// engineDirs are the packages that show any suite's results: a suite's
// section, headline and figures live in its own package and register
// there, so that adding or changing one touches only its folder.
var engineDirs = []string{"report", "plots", "analysis"}

// TestNoSuiteNames checks that no non-test file of report, plots or
// analysis has a string literal that is a suite's name. Fixture
// generators (report/reporttest) write rows, and rows name suites.
func TestNoSuiteNames(t *testing.T) {
	t.Parallel()
	names := map[string]string{}
	for _, n := range suiteNames {
		names[n] = n
	}
	engineSources(t, engineDirs, func(rel, path string) {
		for _, bad := range tierLiterals(t, path, names) {
			t.Errorf("%s:%s names a suite; register the suite's section, headline or figure from its own package", rel, bad)
		}
	})
}
