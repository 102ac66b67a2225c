package tiers

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
)

// Shared holds resources that the tier instances of one run share, by
// key (the disk tier's data file, written once for every layout, copy
// mode and variant), and closes them when the run ends. It is safe for
// concurrent use.
type Shared struct {
	mu    sync.Mutex
	m     map[string]io.Closer
	order []string
}

// NewShared returns an empty Shared.
func NewShared() *Shared { return &Shared{m: map[string]io.Closer{}} }

// Get returns the value under key, made by make the first time; a failed
// make leaves nothing under key.
func (s *Shared) Get(key string, make func() (io.Closer, error)) (io.Closer, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if v, ok := s.m[key]; ok {
		return v, nil
	}
	v, err := make()
	if err != nil {
		return nil, err
	}
	s.m[key] = v
	s.order = append(s.order, key)
	return v, nil
}

// Lookup returns the value under key, if there is one.
func (s *Shared) Lookup(key string) (io.Closer, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.m[key]
	return v, ok
}

// Close closes every value, the newest first, and forgets them.
func (s *Shared) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	var errs []error
	for _, key := range slices.Backward(s.order) {
		if err := s.m[key].Close(); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", key, err))
		}
	}
	s.m, s.order = map[string]io.Closer{}, nil
	return errors.Join(errs...)
}
