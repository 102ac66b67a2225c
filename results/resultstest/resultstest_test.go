package resultstest

import (
	"sync"
	"testing"

	"github.com/kvtier/kvtier/results"
)

var _ results.Sink = (*Sink)(nil)

func TestSinkKeepsRowsInOrder(t *testing.T) {
	t.Parallel()
	var s Sink
	for i := range 3 {
		r := results.NewRow("test")
		r.Rep = i
		if err := s.Write(r); err != nil {
			t.Fatal(err)
		}
	}
	rows := s.Rows()
	if len(rows) != 3 || s.Len() != 3 || rows[0].Rep != 0 || rows[2].Rep != 2 {
		t.Fatalf("rows %+v", rows)
	}
	rows[0].Rep = 9
	if s.Rows()[0].Rep != 0 {
		t.Error("Rows shares its slice with the sink")
	}
	s.Reset()
	if s.Len() != 0 || len(s.Rows()) != 0 {
		t.Errorf("%d rows after Reset", s.Len())
	}
}

func TestSinkConcurrentWrites(t *testing.T) {
	t.Parallel()
	var s Sink
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 50 {
				s.Write(results.NewRow("test"))
				_ = s.Len()
			}
		})
	}
	wg.Wait()
	if s.Len() != 200 {
		t.Fatalf("%d rows after 200 writes", s.Len())
	}
}
