package tiers

import (
	"context"
	"strings"
	"testing"

	"github.com/kvtier/kvtier/diskio"
)

// TestDiskAttrsBuffered: where O_DIRECT is served as buffered I/O
// without an error (ext4 mounted data=journal), a disk row's path says
// buffered, not o_direct, and disk_fs says why.
func TestDiskAttrsBuffered(t *testing.T) {
	b, _, err := OpenBackend(context.Background(), "host", BackendConfig{NUMA: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	for _, tc := range []struct{ buffered, path, fs string }{
		{"", "o_direct", "ext4"},
		{"ext4 mounted data=journal serves O_DIRECT through the page cache", "buffered", "data=journal"},
	} {
		d := &diskTier{env: Env{Backend: b}, v: diskVariant{io: diskio.Pread}, fs: diskio.FS{Type: "ext4", Buffered: tc.buffered}}
		if a := d.Attrs(); a["path"] != tc.path || !strings.Contains(a["disk_fs"], tc.fs) {
			t.Errorf("Buffered %q: path %q, disk_fs %q; want %q and %q", tc.buffered, a["path"], a["disk_fs"], tc.path, tc.fs)
		}
	}
}
