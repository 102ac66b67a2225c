package layers

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/kvtier/kvtier/tiers/tierspec"
)

// tierNameDirs are the packages that show results and plan capacities,
// and the suites that choose among the tiers (the probe's, the sweep's):
// what they know of a tier comes from its description (tierspec), so
// that a new tier needs no edit in them.
var tierNameDirs = []string{"report", "analysis", "plots", "harness/trace", "harness/probe", "harness/sweep"}

// Report, plots, analysis, the capacity plan, the probe and the sweep
// never name a tier: no
// non-test file there has a string literal that is a tier's name or one
// of its aliases, unless its line's comment says it is not a tier (the
// host backend, the host machine). Fixture generators (report/reporttest)
// write rows, and rows name tiers.
func TestNoTierNames(t *testing.T) {
	t.Parallel()
	names := map[string]string{}
	for _, d := range tierspec.All() {
		for _, n := range d.Names() {
			names[n] = d.Name
		}
	}
	engineSources(t, tierNameDirs, func(rel, path string) {
		for _, bad := range tierLiterals(t, path, names) {
			t.Errorf("%s:%s names a tier; iterate tierspec or ask its Desc instead", rel, bad)
		}
	})
}

// engineSources calls fn with the slash path from the module root and
// the path of each non-test Go file under dirs, leaving out the fixture
// generators (report/reporttest), which write rows, and rows name tiers
// and suites.
func engineSources(t *testing.T, dirs []string, fn func(rel, path string)) {
	t.Helper()
	root := filepath.Join("..", "..")
	for _, dir := range dirs {
		err := filepath.WalkDir(filepath.Join(root, dir), func(path string, d fs.DirEntry, err error) error {
			switch {
			case err != nil:
				return err
			case d.IsDir() && d.Name() == "reporttest":
				return filepath.SkipDir
			case d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go"):
				return nil
			}
			rel, _ := filepath.Rel(root, path)
			fn(filepath.ToSlash(rel), path)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

// tierLiterals returns "LINE: literal" for each string literal in the
// file at path that is one of names, on a line without a "not a tier"
// comment.
func tierLiterals(t *testing.T, path string, names map[string]string) []string {
	t.Helper()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, nil, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	exempt := map[int]bool{}
	for _, cg := range f.Comments {
		for _, c := range cg.List {
			if strings.Contains(c.Text, "not a tier") {
				exempt[fset.Position(c.Pos()).Line] = true
			}
		}
	}
	var out []string
	ast.Inspect(f, func(n ast.Node) bool {
		lit, ok := n.(*ast.BasicLit)
		if !ok || lit.Kind != token.STRING {
			return true
		}
		s, err := strconv.Unquote(lit.Value)
		line := fset.Position(lit.Pos()).Line
		if _, tier := names[s]; err == nil && tier && !exempt[line] {
			out = append(out, strconv.Itoa(line)+": "+lit.Value)
		}
		return true
	})
	return out
}
