// Package simtest starts the vLLM simulator (package vllmsim) for tests in
// other packages.
package simtest

import (
	"testing"

	"github.com/kvtier/kvtier/vllmsim"
)

// Start starts a simulator of cfg on a loopback port, as kvtier sim does,
// and returns it and its base URL. The simulator is closed when the test
// ends; a simulator that cannot start fails the test.
func Start(t testing.TB, cfg vllmsim.Config) (*vllmsim.Server, string) {
	t.Helper()
	s, err := vllmsim.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	url, err := s.Start(t.Context(), "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return s, url
}
