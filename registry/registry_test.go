package registry

import (
	"cmp"
	"slices"
	"testing"
)

type entry struct {
	name  string
	order int
}

func TestRegistry(t *testing.T) {
	t.Parallel()
	r := New("thing", func(e entry) string { return e.name }, func(a, b entry) int { return cmp.Compare(a.order, b.order) })
	for _, e := range []entry{{"c", 1}, {"a", 2}, {"b", 1}} {
		r.Add(e)
	}
	if got := r.Names(); !slices.Equal(got, []string{"b", "c", "a"}) {
		t.Errorf("Names = %v, want order then name", got)
	}
	if e, ok := r.Lookup("a"); !ok || e.order != 2 {
		t.Errorf("Lookup(a) = %v, %v", e, ok)
	}
	if _, ok := r.Lookup("z"); ok {
		t.Error("Lookup of an unknown name succeeded")
	}
	defer func() {
		if recover() == nil {
			t.Error("a name added twice did not panic")
		}
	}()
	r.Add(entry{"a", 9})
}
