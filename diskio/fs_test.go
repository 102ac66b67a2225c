package diskio

import (
	"strings"
	"testing"
)

// An ext4 mount with data=journal serves O_DIRECT through the page cache
// without an error: the mount holding a directory is the longest mount
// point above it (the last listed where two share a point), and only its
// own options count.
func TestJournalData(t *testing.T) {
	t.Parallel()
	info := strings.Join([]string{
		"22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw,data=journal",
		"30 22 8:2 / /data rw,relatime shared:2 - ext4 /dev/sdb1 rw,data=ordered",
		"31 30 8:3 / /data/journal rw shared:3 - ext4 /dev/sdc1 rw,errors=remount-ro,data=journal",
		"32 22 0:40 / /tmp rw shared:4 - tmpfs tmpfs rw",
		"33 22 8:4 / /my\\040disk rw shared:5 - xfs /dev/sdd1 rw",
		"34 22 8:5 / /over rw shared:6 - ext4 /dev/sde1 rw,data=journal",
		"35 22 8:6 / /over rw shared:7 - ext4 /dev/sdf1 rw",
		"garbage",
	}, "\n")
	for dir, want := range map[string]bool{
		"/data/journal/kv": true, "/data/journal": true, "/home/u": true, "/data/journalx": false,
		"/data": false, "/tmp/x": false, "/my disk/kv": false, "/over/kv": false,
	} {
		if got := journalData([]byte(info), dir) != ""; got != want {
			t.Errorf("%s: buffered %v, want %v", dir, got, want)
		}
	}
}
