package results

import (
	"encoding/csv"
	"errors"
	"fmt"
	"os"
	"slices"
	"sync"
)

// A Sink receives rows as they are measured.
type Sink interface {
	Write(Row) error
	Close() error
}

// A CSV is a Sink that appends rows to a CSV file with a fixed header and
// flushes each row to the operating system before Write returns, so a run
// that is interrupted (Ctrl-C, a crashed peer, a killed process) keeps
// every row it finished. It is safe for concurrent use.
type CSV struct {
	mu      sync.Mutex
	f       *os.File
	w       *csv.Writer
	columns []Column
	known   map[string]bool
	errors  int // rows written with status error
	rows    int // rows written
}

// CreateCSV creates path (truncating it) and writes the header. The columns
// are CommonColumns followed by extra, in that order; use OpenCSV with an
// explicit list for files that do not carry the common columns.
func CreateCSV(path string, extra ...string) (*CSV, error) {
	return OpenCSV(path, append(slices.Clone(CommonColumns), extra...))
}

// OpenCSV creates path with exactly the given columns: the common ones
// typed as CommonSchema declares them, every other written as its rows
// set it. A suite's file is opened with OpenSchema.
func OpenCSV(path string, columns []string) (*CSV, error) {
	return OpenSchema(path, Schema(columns))
}

// OpenSchema creates path with exactly the given columns, each cell
// written as its column's type says (Column.Format).
func OpenSchema(path string, columns []Column) (*CSV, error) {
	known := map[string]bool{}
	for _, c := range columns {
		if known[c.Name] {
			return nil, fmt.Errorf("results: column %q listed twice", c.Name)
		}
		known[c.Name] = true
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("results: %w", err)
	}
	s := &CSV{f: f, w: csv.NewWriter(f), columns: slices.Clone(columns), known: known}
	if err := s.writeRecord(Names(columns)); err != nil {
		f.Close()
		return nil, err
	}
	return s, nil
}

// Columns returns the header of the file.
func (s *CSV) Columns() []string { return Names(s.columns) }

// Path returns the file's name.
func (s *CSV) Path() string { return s.f.Name() }

// Write appends one row and flushes it. A row that sets a column the file
// does not have is refused, so a misspelt column cannot vanish silently.
func (s *CSV) Write(r Row) error {
	for k := range r.Extra {
		if !s.known[k] {
			return fmt.Errorf("results: row sets column %q, which %s does not have", k, s.f.Name())
		}
	}
	if r.Status == "" {
		return errors.New("results: row has no status")
	}
	rec := make([]string, len(s.columns))
	for i, c := range s.columns {
		rec[i] = c.Format(r.Cell(c.Name))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.writeRecord(rec); err != nil {
		return err
	}
	s.rows++
	if r.Status == StatusError {
		s.errors++
	}
	return nil
}

// Rows returns how many rows were written.
func (s *CSV) Rows() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.rows
}

// Errors returns how many rows with status error were written.
func (s *CSV) Errors() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.errors
}

func (s *CSV) writeRecord(rec []string) error {
	if err := s.w.Write(rec); err != nil {
		return fmt.Errorf("results: writing %s: %w", s.f.Name(), err)
	}
	s.w.Flush()
	if err := s.w.Error(); err != nil {
		return fmt.Errorf("results: writing %s: %w", s.f.Name(), err)
	}
	return nil
}

// Close flushes and closes the file.
func (s *CSV) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.w.Flush()
	err := s.w.Error()
	if cerr := s.f.Close(); err == nil {
		err = cerr
	}
	return err
}
