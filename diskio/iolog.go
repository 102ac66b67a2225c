package diskio

import (
	"bufio"
	"fmt"
	"io"
	"strings"
)

// An Op is one read or write of a file: Len bytes at offset Off.
type Op struct {
	Off, Len int64
}

// WriteIOLog writes ops as a fio iolog (version 2): the file added and
// opened, one "read" (or, with write, "write") line per op in order, the
// file closed. fio --read_iolog replays it, so that fio does exactly the
// reads or writes kvtier did. file must not contain white space (fio's
// format has no quoting).
func WriteIOLog(w io.Writer, file string, write bool, ops []Op) error {
	if file == "" || strings.ContainsAny(file, " \t\n") {
		return fmt.Errorf("diskio: iolog: file name %q is empty or has white space", file)
	}
	verb := "read"
	if write {
		verb = "write"
	}
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "fio version 2 iolog\n%s add\n%s open\n", file, file)
	for _, op := range ops {
		if op.Off < 0 || op.Len <= 0 {
			return fmt.Errorf("diskio: iolog: %s of %d bytes at %d", verb, op.Len, op.Off)
		}
		fmt.Fprintf(bw, "%s %s %d %d\n", file, verb, op.Off, op.Len)
	}
	fmt.Fprintf(bw, "%s close\n", file)
	return bw.Flush()
}
