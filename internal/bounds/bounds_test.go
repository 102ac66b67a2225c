package bounds

import (
	"errors"
	"io"
	"math"
	"strings"
	"testing"
)

func TestReadAt(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		size, off int64
		n         int
		want      int
		eof       bool
		outside   bool
	}{
		{"inside", 16, 4, 8, 8, false, false},
		{"to the end", 16, 8, 8, 8, false, false},
		{"past the end", 16, 12, 8, 4, true, false},
		{"at the end", 16, 16, 8, 0, true, false},
		{"empty at the end", 16, 16, 0, 0, false, false},
		{"negative", 16, -1, 8, 0, false, true},
		{"past size", 16, 17, 0, 0, false, true},
		{"huge offset", 16, math.MaxInt64, 8, 0, false, true},
		{"empty memory", 0, 0, 8, 0, true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := ReadAt("buf", tt.size, tt.off, tt.n)
			switch {
			case tt.outside:
				if err == nil || errors.Is(err, io.EOF) || !strings.HasPrefix(err.Error(), "buf: read at ") {
					t.Fatalf("ReadAt = %d, %v; want an error naming buf", got, err)
				}
			case tt.eof != errors.Is(err, io.EOF), !tt.eof && err != nil:
				t.Fatalf("ReadAt err = %v, want EOF %v", err, tt.eof)
			}
			if got != tt.want {
				t.Errorf("ReadAt = %d bytes, want %d", got, tt.want)
			}
		})
	}
}

func TestWriteAt(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		size, off int64
		n         int
		ok        bool
	}{
		{"inside", 16, 4, 8, true},
		{"to the end", 16, 8, 8, true},
		{"empty at the end", 16, 16, 0, true},
		{"one past the end", 16, 9, 8, false},
		{"negative", 16, -1, 1, false},
		{"past size", 16, 17, 0, false},
		{"huge offset", 16, math.MaxInt64, 8, false},
		{"huge offset, nothing", 16, math.MaxInt64, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := WriteAt("buf", tt.size, tt.off, tt.n)
			if (err == nil) != tt.ok {
				t.Fatalf("WriteAt = %v, want ok %v", err, tt.ok)
			}
			if err != nil && !strings.HasPrefix(err.Error(), "buf: write of ") {
				t.Errorf("error %q does not name buf", err)
			}
		})
	}
}
