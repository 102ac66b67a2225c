package system

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kvtier/kvtier/csrc/cufilewrap/cufiletest"
	"github.com/kvtier/kvtier/results"
)

// diskTree builds a sysfs fixture under a new root: an NVMe disk with a
// partition and a virtio disk, linked from /sys/block and /sys/dev/block
// the way the kernel links them (relative symlinks).
func diskTree(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	nvme := "sys/devices/pci0000:00/0000:00:01.0/nvme/nvme0/nvme0n1"
	vda := "sys/devices/pci0000:00/0000:00:02.0/virtio1/block/vda"
	files := map[string]string{
		nvme + "/size":                           "7501476528\n",
		nvme + "/device/model":                   "SAMSUNG MZQL27T6HBLA-00A07   \n",
		nvme + "/queue/rotational":               "0\n",
		nvme + "/queue/scheduler":                "[none] mq-deadline\n",
		nvme + "/queue/nr_requests":              "1023\n",
		nvme + "/queue/max_sectors_kb":           "128\n",
		nvme + "/queue/logical_block_size":       "4096\n",
		nvme + "/mq/0/cpu_list":                  "0\n",
		nvme + "/mq/1/cpu_list":                  "1\n",
		nvme + "/nvme0n1p1/partition":            "1\n",
		nvme + "/nvme0n1p1/size":                 "2048\n",
		vda + "/size":                            "536870912\n",
		vda + "/queue/rotational":                "1\n",
		vda + "/queue/scheduler":                 "none [mq-deadline] kyber bfq\n",
		vda + "/queue/nr_requests":               "256\n",
		"sys/bus/virtio/drivers/virtio_blk/bind": "",
		"sys/block/zram0/size":                   "0\n",
	}
	for f, v := range files {
		p := filepath.Join(root, f)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(v), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	links := map[string]string{
		"sys/block/nvme0n1":    "../devices/pci0000:00/0000:00:01.0/nvme/nvme0/nvme0n1",
		"sys/block/vda":        "../devices/pci0000:00/0000:00:02.0/virtio1/block/vda",
		"sys/dev/block/259:0":  "../../devices/pci0000:00/0000:00:01.0/nvme/nvme0/nvme0n1",
		"sys/dev/block/259:1":  "../../devices/pci0000:00/0000:00:01.0/nvme/nvme0/nvme0n1/nvme0n1p1",
		"sys/dev/block/254:0":  "../../devices/pci0000:00/0000:00:02.0/virtio1/block/vda",
		vda + "/device/driver": "../../../../bus/virtio/drivers/virtio_blk",
	}
	for l, target := range links {
		p := filepath.Join(root, l)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, p); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func TestDiskOf(t *testing.T) {
	t.Parallel()
	root := diskTree(t)
	for _, tc := range []struct {
		major, minor uint32
		want         results.Disk
	}{
		{259, 1, results.Disk{Name: "nvme0n1", Model: "SAMSUNG MZQL27T6HBLA-00A07", NVMe: true, SizeBytes: 7501476528 * 512,
			Scheduler: "none", NrRequests: 1023, HWQueues: 2, MaxSectorsKB: 128, LogicalBlock: 4096}},
		{259, 0, results.Disk{Name: "nvme0n1", Model: "SAMSUNG MZQL27T6HBLA-00A07", NVMe: true, SizeBytes: 7501476528 * 512,
			Scheduler: "none", NrRequests: 1023, HWQueues: 2, MaxSectorsKB: 128, LogicalBlock: 4096}},
		{254, 0, results.Disk{Name: "vda", Driver: "virtio_blk", Rotational: true, SizeBytes: 536870912 * 512,
			Scheduler: "mq-deadline", NrRequests: 256}},
	} {
		got, err := DiskOf(root, tc.major, tc.minor)
		if err != nil {
			t.Fatal(err)
		}
		if got != tc.want {
			t.Errorf("DiskOf(%d:%d) = %+v, want %+v", tc.major, tc.minor, got, tc.want)
		}
	}
	if _, err := DiskOf(root, 0, 42); err == nil || !strings.Contains(err.Error(), "no block device") {
		t.Errorf("an anonymous device: %v", err)
	}
}

func TestCollectDisks(t *testing.T) {
	t.Parallel()
	var m results.Manifest
	if err := collectDisks(Config{Root: diskTree(t)}, &m); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, d := range m.Disks {
		names = append(names, d.Name)
	}
	if strings.Join(names, ",") != "nvme0n1,vda" {
		t.Errorf("disks %v, want nvme0n1 and vda (zram0 has no size)", names)
	}
	if err := collectDisks(Config{Root: t.TempDir()}, &m); err != nil {
		t.Errorf("no sysfs: %v", err)
	}
}

func TestDiskText(t *testing.T) {
	t.Parallel()
	d := results.Disk{Name: "nvme0n1", Model: "M", Driver: "nvme", NVMe: true, Scheduler: "none", NrRequests: 1023, HWQueues: 2, MaxSectorsKB: 128}
	want := "nvme0n1 (M, nvme, NVMe, scheduler none, nr_requests 1023, hw queues 2, max request 128 KiB)"
	if got := DiskText(d); got != want {
		t.Errorf("DiskText = %q, want %q", got, want)
	}
	for in, want := range map[string]string{"none [mq-deadline] kyber": "mq-deadline", "[none] mq-deadline": "none", "none": "none", "": ""} {
		if got := ParseScheduler(in); got != want {
			t.Errorf("ParseScheduler(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestCollectDiskLibraries records io_uring and libcufile in the
// manifest: the fake libcufile found, a missing one with the paths tried.
func TestCollectDiskLibraries(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		lib       string
		available bool
		want      string
	}{
		{cufiletest.Build(t), true, "(cuFileDriverClose_v2)"},
		{filepath.Join(t.TempDir(), "libcufile.so.0"), false, "cannot load libcufile"},
	} {
		var m results.Manifest
		if err := collectDisks(Config{Root: t.TempDir(), Libs: Libraries{CUFile: tc.lib}}, &m); err != nil {
			t.Fatal(err)
		}
		st := map[string]results.BackendStatus{}
		for _, b := range m.Backends {
			st[b.Name] = b
		}
		cf := st["cufile"]
		if cf.Available != tc.available || !strings.Contains(cf.Detail+cf.Reason, tc.want) {
			t.Errorf("cufile status %+v, want available=%v and %q", cf, tc.available, tc.want)
		}
		if u, ok := st["io_uring"]; !ok || (!u.Available && u.Reason == "") {
			t.Errorf("io_uring status %+v", u)
		}
	}
}

// TestGDSMode: cuFile runs GPUDirect Storage only where the nvidia-fs
// module is loaded; without it, its POSIX fallback.
func TestGDSMode(t *testing.T) {
	root := t.TempDir()
	if m := GDSMode(root); m != "compatibility" {
		t.Errorf("without nvidia-fs: %q", m)
	}
	if err := os.MkdirAll(filepath.Join(root, "proc/driver/nvidia-fs"), 0o755); err != nil {
		t.Fatal(err)
	}
	if m := GDSMode(root); m != "native" {
		t.Errorf("with nvidia-fs: %q", m)
	}
}
