package main

import (
	"bytes"
	"cmp"
	"flag"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/kvtier/kvtier/results"
)

var update = flag.Bool("update", false, "rewrite docs/columns.md")

const docPath = "../../docs/columns.md"

// docs/columns.md is what the suites' declarations say today.
func TestDocCurrent(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	if err := write(&b, results.Suites()); err != nil {
		t.Fatal(err)
	}
	if *update {
		if err := os.WriteFile(docPath, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	have, err := os.ReadFile(docPath)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(have, b.Bytes()) {
		t.Errorf("docs/columns.md is not current: run go run ./cmd/gencolumns > docs/columns.md (or go test ./cmd/gencolumns -update)")
	}
}

// typeExceptions are names two files declare with different types, on
// purpose: a request's flag beside a run's count.
var typeExceptions = map[string]string{
	"slo_met": "replay.csv: whether the request met both SLOs; replay_run.csv, knee.csv: how many did",
}

// Every column of every registered suite is declared: a known type, a
// unit from results.Units and a one-line doc; no file lists a column
// twice; a file's keys and compared value are among its columns; a name
// means one unit (and one type, int and float aside) wherever it is.
func TestSchemas(t *testing.T) {
	t.Parallel()
	suites := results.Suites()
	if len(suites) < 8 {
		t.Fatalf("%d suites registered", len(suites))
	}
	first := map[string]results.Column{}
	where := map[string]string{}
	for _, s := range suites {
		for _, f := range s.Files {
			seen := map[string]bool{}
			for _, c := range f.Schema() {
				if err := c.Check(); err != nil {
					t.Errorf("%s: %v", f.Name, err)
				}
				if seen[c.Name] {
					t.Errorf("%s: column %s declared twice", f.Name, c.Name)
				}
				seen[c.Name] = true
				agree(t, c, f.Name, first, where)
			}
			for _, k := range slices.Concat(f.Keys, f.Match, []string{cmp.Or(f.Value, results.ColSeconds)}) {
				if !f.Raw && !seen[k] {
					t.Errorf("%s: key or value %s is not a column of it", f.Name, k)
				}
			}
		}
	}
}

// agree checks that c, declared in file, has the unit and type the first
// declaration of its name had.
func agree(t *testing.T, c results.Column, file string, first map[string]results.Column, where map[string]string) {
	t.Helper()
	p, ok := first[c.Name]
	if typeExceptions[c.Name] != "" {
		return
	}
	if !ok {
		first[c.Name], where[c.Name] = c, file
		return
	}
	numeric := func(ty results.Type) bool { return ty == results.TypeInt || ty == results.TypeFloat }
	sameType := p.Type == c.Type || numeric(p.Type) && numeric(c.Type)
	if p.Unit != c.Unit || !sameType {
		t.Errorf("column %s: %s %q in %s but %s %q in %s", c.Name, p.Type, p.Unit, where[c.Name], c.Type, c.Unit, file)
	}
}

// The generator imports every package that registers a suite, so that
// none is missing from the page.
func TestEverySuiteImported(t *testing.T) {
	t.Parallel()
	f, err := parser.ParseFile(token.NewFileSet(), filepath.Join("..", "..", "harness", "suites", "suites.go"), nil, parser.ImportsOnly)
	if err != nil {
		t.Fatal(err)
	}
	var imported []string
	for _, im := range f.Imports {
		p, _ := strconv.Unquote(im.Path.Value)
		imported = append(imported, p)
	}
	root := filepath.Join("..", "..")
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return err
		}
		src, err := os.ReadFile(p)
		if err != nil || !bytes.Contains(src, []byte("results.RegisterSuite(")) {
			return err
		}
		rel, _ := filepath.Rel(root, filepath.Dir(p))
		pkg := path.Join("github.com/kvtier/kvtier", filepath.ToSlash(rel))
		if !slices.Contains(imported, pkg) {
			t.Errorf("%s registers a suite; import it in harness/suites/suites.go", pkg)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
