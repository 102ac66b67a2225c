package resultstest

import (
	"encoding/csv"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// SameCSV compares a CSV file's text got with a golden file's want by
// named columns, not by line: every column of want must be in got, in
// any order, with want's values row by row; a column that only got has
// must be empty in every row. So a golden file need not change when a
// column is added to a schema and these rows leave it empty; a column
// with values, or one removed, is a difference, and the golden file is
// then written again (the test's update switch, docs/testing.md).
func SameCSV(got, want string) error {
	g, err := readCSV(got)
	if err != nil {
		return fmt.Errorf("got: %w", err)
	}
	w, err := readCSV(want)
	if err != nil {
		return fmt.Errorf("golden: %w", err)
	}
	if len(g) != len(w) {
		return fmt.Errorf("%d rows, the golden file has %d", len(g)-1, len(w)-1)
	}
	var errs []error
	for col, name := range g[0] {
		wcol := slices.Index(w[0], name)
		for r := 1; r < len(g); r++ {
			want := ""
			if wcol >= 0 {
				want = w[r][wcol]
			}
			if g[r][col] != want {
				errs = append(errs, fmt.Errorf("row %d, column %s: %q, the golden file has %q", r, name, g[r][col], want))
			}
		}
	}
	for _, name := range w[0] {
		if !slices.Contains(g[0], name) {
			errs = append(errs, fmt.Errorf("column %s: gone", name))
		}
	}
	return errors.Join(errs...)
}

// readCSV reads a CSV's records, the header first; a file with no
// header is an error.
func readCSV(s string) ([][]string, error) {
	r := csv.NewReader(strings.NewReader(s))
	r.FieldsPerRecord = -1
	recs, err := r.ReadAll()
	if err == nil && len(recs) == 0 {
		err = errors.New("no header")
	}
	if err != nil {
		return nil, err
	}
	for i, rec := range recs[1:] {
		if len(rec) != len(recs[0]) {
			return nil, fmt.Errorf("row %d has %d fields, the header %d", i+1, len(rec), len(recs[0]))
		}
	}
	return recs, nil
}
