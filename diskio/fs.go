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
	return fsOf(int64(s.Type), int64(s.Bavail)*int64(s.Bsize), int64(s.Bsize)), nil
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
