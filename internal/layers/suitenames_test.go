package layers

import (
	"io/fs"
	"path/filepath"
	"strings"
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
	root := filepath.Join("..", "..")
	for _, dir := range engineDirs {
		err := filepath.WalkDir(filepath.Join(root, dir), func(path string, d fs.DirEntry, err error) error {
			switch {
			case err != nil:
				return err
			case d.IsDir() && d.Name() == "reporttest":
				return filepath.SkipDir
			case d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go"):
				return nil
			}
			for _, bad := range tierLiterals(t, path, names) {
				rel, _ := filepath.Rel(root, path)
				t.Errorf("%s:%s names a suite; register the suite's section, headline or figure from its own package", filepath.ToSlash(rel), bad)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}
