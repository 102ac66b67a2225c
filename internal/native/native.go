// Package native holds the rule every loader of a native library follows:
// a library is loaded once per path for the life of the process, its
// failure remembered as well as its success, and never unloaded (dlclose
// of a driver library with live handles is undefined behaviour).
package native

import "sync"

// A Cache holds the loads of one kind of library, by the path asked for.
// The zero value is an empty cache ready to use.
type Cache[T any] struct {
	mu sync.Mutex
	m  map[string]result[T]
}

type result[T any] struct {
	v   T
	err error
}

// Load returns what open returned the first time it was called with path,
// calling it now if it never was. Concurrent callers of one path wait for
// the first; open runs at most once per path.
func (c *Cache[T]) Load(path string, open func(path string) (T, error)) (T, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if r, ok := c.m[path]; ok {
		return r.v, r.err
	}
	v, err := open(path)
	if c.m == nil {
		c.m = map[string]result[T]{}
	}
	c.m[path] = result[T]{v, err}
	return v, err
}
