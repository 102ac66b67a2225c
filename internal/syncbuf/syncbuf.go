// Package syncbuf holds a bytes.Buffer that is safe for concurrent use,
// for tests that read what a command, a server or a child process writes
// while it is still writing.
package syncbuf

import (
	"bytes"
	"sync"
)

// A Buffer is a bytes.Buffer guarded by a mutex. The zero value is an
// empty buffer ready to use.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write appends p to the buffer.
func (s *Buffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// String returns what has been written so far.
func (s *Buffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
