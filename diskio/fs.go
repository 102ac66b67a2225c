// Package diskio reads KV blocks from a file on a local disk the way a
// serving engine's disk tier does: reads of (file offset, length) chunks
// into aligned memory, bypassing the page cache (O_DIRECT), submitted by
// io_uring (the ring of csrc/uring, with registered buffers and a bounded
// queue depth) or one pread per chunk, or by cuFile straight into GPU
// memory (GPUDirect Storage, csrc/cufilewrap). It also writes the file
// with the position-dependent pattern, drops its pages from the page
// cache, notices a file removed or truncated under it, and says whether a
// directory is on a disk at all (tmpfs is memory).
//
// A read plan is a list of kv.Copy: Src is the file offset, Dst the
// offset in the destination buffer, Bytes the length.
package diskio

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/sys/unix"
)

// An FS describes the filesystem a directory is on.
type FS struct {
	Type string // "ext4", "xfs", "tmpfs", ... or the magic number in hex
	// Memory is true for filesystems that keep files in RAM (tmpfs,
	// ramfs): a read from them is a memory copy, not disk I/O.
	Memory bool
	Free   int64 // bytes available to an unprivileged writer
	Block  int64 // the filesystem's block size
	// Buffered says why O_DIRECT is taken as buffered I/O there without
	// an error ("" where it is not known to be): ext4 mounted with
	// data=journal.
	Buffered string
}

// Filesystem magic numbers (statfs f_type), from <linux/magic.h>.
var fsNames = map[int64]string{
	0xef53:     "ext4", // also ext2 and ext3
	0x58465342: "xfs",
	0x9123683e: "btrfs",
	0x01021994: "tmpfs",
	0x858458f6: "ramfs",
	0x794c7630: "overlayfs",
	0x6969:     "nfs",
	0x65735546: "fuse",
	0x2fc12fc1: "zfs",
	0xf2f52010: "f2fs",
}

// memoryFS are the filesystems whose files live in memory.
var memoryFS = map[string]bool{"tmpfs": true, "ramfs": true}

// StatFS describes the filesystem dir is on.
func StatFS(dir string) (FS, error) {
	var s unix.Statfs_t
	if err := unix.Statfs(dir, &s); err != nil {
		return FS{}, fmt.Errorf("statfs %s: %w", dir, err)
	}
	fs := fsOf(int64(s.Type), int64(s.Bavail)*int64(s.Bsize), int64(s.Bsize))
	if fs.Type == "ext4" {
		if info, err := os.ReadFile("/proc/self/mountinfo"); err == nil {
			fs.Buffered = journalData(info, dir)
		}
	}
	return fs, nil
}

// journalData says why O_DIRECT becomes buffered I/O on the ext4 mount
// that holds dir, as mountinfo (/proc/self/mountinfo) lists the mounts:
// "data=journal" among its super options ext4 serves O_DIRECT through
// the page cache, silently. (A file with the journal-data attribute,
// chattr +j, is not seen here.)
func journalData(mountinfo []byte, dir string) string {
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	if real, err := filepath.EvalSymlinks(dir); err == nil {
		dir = real
	}
	best, opts := -1, ""
	for line := range strings.Lines(string(mountinfo)) {
		pre, post, ok := strings.Cut(strings.TrimSpace(line), " - ")
		f, g := strings.Fields(pre), strings.Fields(post)
		if !ok || len(f) < 5 || len(g) < 3 {
			continue
		}
		mp := strings.ReplaceAll(f[4], `\040`, " ")
		if within(dir, mp) && len(mp) >= best {
			best, opts = len(mp), ""
			if g[0] == "ext4" {
				opts = g[2]
			}
		}
	}
	if slices.Contains(strings.Split(opts, ","), "data=journal") {
		return "ext4 mounted data=journal serves O_DIRECT through the page cache"
	}
	return ""
}

// within reports whether path is mount point mp or below it.
func within(path, mp string) bool {
	return mp == "/" || path == mp || strings.HasPrefix(path, mp+"/")
}

// fsOf names the filesystem of magic number typ.
func fsOf(typ, free, block int64) FS {
	name, ok := fsNames[typ]
	if !ok {
		name = fmt.Sprintf("%#x", typ)
	}
	return FS{Type: name, Memory: memoryFS[name], Free: free, Block: block}
}

// MemoryReason returns why dir cannot hold a disk tier's file when its
// filesystem keeps files in memory, else "".
func (fs FS) MemoryReason(dir string) string {
	if !fs.Memory {
		return ""
	}
	return fmt.Sprintf("%s is on %s, which keeps files in memory: reads from it measure DRAM, not a disk (give a directory on a disk)", dir, fs.Type)
}

// ErrNoSpace says a write found the filesystem full.
var ErrNoSpace = errors.New("no space left on the filesystem")

// HugePages asks the kernel to back b, anonymous memory not yet pinned,
// with transparent huge pages: MADV_HUGEPAGE, then MADV_COLLAPSE (Linux
// 6.1) for pages already there. A read into a huge page is one
// physically contiguous DMA segment instead of one per 4 KiB page, as
// it is into a GPU's memory or a driver's pinned pool; in a virtual
// machine each segment costs the host a copy of its own. It is best
// effort: the error says the kernel declined, and b is unchanged then.
func HugePages(b []byte) error {
	if len(b) == 0 {
		return nil
	}
	if err := unix.Madvise(b, unix.MADV_HUGEPAGE); err != nil {
		return fmt.Errorf("madvise MADV_HUGEPAGE: %w", err)
	}
	if err := unix.Madvise(b, unix.MADV_COLLAPSE); err != nil {
		return fmt.Errorf("madvise MADV_COLLAPSE: %w", err)
	}
	return nil
}
