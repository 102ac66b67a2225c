// Package resultstest holds an in-memory results.Sink for the tests of
// the packages that write rows.
package resultstest

import (
	"slices"
	"sync"

	"github.com/kvtier/kvtier/results"
)

// A Sink keeps the rows written to it in memory, in the order written. It
// is safe for concurrent use; the zero value is an empty sink.
type Sink struct {
	mu   sync.Mutex
	rows []results.Row
}

// Write appends r.
func (s *Sink) Write(r results.Row) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rows = append(s.rows, r)
	return nil
}

// Close does nothing: the rows stay readable.
func (s *Sink) Close() error { return nil }

// Rows returns a copy of the rows written so far.
func (s *Sink) Rows() []results.Row {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.rows)
}

// Len returns how many rows have been written so far.
func (s *Sink) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.rows)
}

// Reset forgets the rows written so far.
func (s *Sink) Reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rows = nil
}
