// Package registry holds the one kind of registry kvtier's pluggable parts
// use — tiers, backends, suites, manifest collectors: named entries added
// from init functions and listed in a fixed order, so that adding a part
// is one file and no list elsewhere is edited. It imports nothing else
// from kvtier.
package registry

import (
	"cmp"
	"fmt"
	"slices"
	"sync"
)

// A Registry holds entries of type T by name.
type Registry[T any] struct {
	kind  string           // "tier", "suite", ... for messages
	name  func(T) string   // an entry's name
	order func(a, b T) int // listing order; ties by name
	mu    sync.Mutex
	m     map[string]T
}

// New returns an empty registry of entries called kind, named by name and
// listed in order (ties broken by name).
func New[T any](kind string, name func(T) string, order func(a, b T) int) *Registry[T] {
	return &Registry[T]{kind: kind, name: name, order: order, m: map[string]T{}}
}

// Add registers v. A name registered twice is a programming error and
// panics.
func (r *Registry[T]) Add(v T) {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := r.name(v)
	if _, dup := r.m[n]; dup {
		panic(fmt.Sprintf("registry: %s %s registered twice", r.kind, n))
	}
	r.m[n] = v
}

// All returns every entry in order.
func (r *Registry[T]) All() []T {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]T, 0, len(r.m))
	for _, v := range r.m {
		out = append(out, v)
	}
	slices.SortFunc(out, func(a, b T) int {
		return cmp.Or(r.order(a, b), cmp.Compare(r.name(a), r.name(b)))
	})
	return out
}

// Names returns the names of every entry in order.
func (r *Registry[T]) Names() []string {
	all := r.All()
	names := make([]string, len(all))
	for i, v := range all {
		names[i] = r.name(v)
	}
	return names
}

// Lookup returns the entry called name.
func (r *Registry[T]) Lookup(name string) (T, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	v, ok := r.m[name]
	return v, ok
}
