// Package bounds holds the one bounds rule of kvtier's io.ReaderAt and
// io.WriterAt over fixed-size memory, so that host buffers and device
// allocations accept and refuse the same reads and writes: a read may run
// past the end (it is cut short, with io.EOF, as io.ReaderAt says), a
// write must fit whole (nothing is written otherwise), and an offset
// outside the memory is an error. The checks cannot overflow, whatever
// the offset.
package bounds

import (
	"fmt"
	"io"
)

// ReadAt returns how many of the n bytes asked for at off lie in memory
// of size bytes, with io.EOF when that is fewer than n. An offset below
// 0 or past size is an error naming what.
func ReadAt(what string, size, off int64, n int) (int, error) {
	if off < 0 || off > size {
		return 0, fmt.Errorf("%s: read at %d outside %d bytes", what, off, size)
	}
	if int64(n) > size-off {
		return int(size - off), io.EOF
	}
	return n, nil
}

// WriteAt checks that n bytes written at off fit whole in memory of size
// bytes; the error names what.
func WriteAt(what string, size, off int64, n int) error {
	if off < 0 || int64(n) > size-off {
		return fmt.Errorf("%s: write of %d bytes at %d outside %d bytes", what, n, off, size)
	}
	return nil
}
