package system

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/kvtier/kvtier/diskio"
	"github.com/kvtier/kvtier/results"
)

func init() {
	Register(Collector{Name: "disk", Order: 30, Collect: collectDisks})
}

// collectDisks records every block device with a size under the root's
// /sys/block in m.Disks, and in m.Backends whether io_uring runs here and
// whether libcufile (GPUDirect Storage) loads: what the disk tier reads
// with.
func collectDisks(c Config, m *results.Manifest) error {
	st := results.BackendStatus{Name: "io_uring", Available: true, Detail: "kernel rings (O_DIRECT reads, registered buffers)"}
	if err := diskio.ProbeUring(); err != nil {
		st = results.BackendStatus{Name: "io_uring", Reason: err.Error()}
		if v := readLine(c.Root, "proc/sys/kernel/io_uring_disabled"); v != "" && v != "0" {
			st.Reason += "; kernel.io_uring_disabled = " + v
		}
	}
	m.Backends = append(m.Backends, st)
	if lib, err := diskio.LoadCUFile(c.Libs.CUFile); err != nil {
		m.Backends = append(m.Backends, results.BackendStatus{Name: "cufile", Reason: err.Error()})
	} else {
		m.Backends = append(m.Backends, results.BackendStatus{Name: "cufile", Available: true, Detail: lib + "; GDS mode " + GDSMode(c.Root)})
	}
	root := c.Root
	ents, err := os.ReadDir(filepath.Join(root, "sys/block"))
	if err != nil {
		return nil // no sysfs: nothing to say
	}
	for _, e := range ents {
		d := readDisk(root, filepath.Join("sys/block", e.Name()))
		if d.SizeBytes > 0 {
			m.Disks = append(m.Disks, d)
		}
	}
	return nil
}

// GDSMode says how cuFile moves data on the machine under root:
// "native" (GPUDirect Storage: DMA between the disk and GPU memory) where
// the nvidia-fs kernel module is loaded (/proc/driver/nvidia-fs), else
// "compatibility": cuFile's POSIX fallback (allow_compat_mode, on by
// default), which reads through host memory and copies to the GPU.
func GDSMode(root string) string {
	if _, err := os.Stat(filepath.Join(root, "proc/driver/nvidia-fs")); err == nil {
		return "native"
	}
	return "compatibility"
}

// DiskOf returns the disk that holds device major:minor (a partition's
// whole disk), from sysfs under root.
func DiskOf(root string, major, minor uint32) (results.Disk, error) {
	link := filepath.Join(root, "sys/dev/block", fmt.Sprintf("%d:%d", major, minor))
	target, err := os.Readlink(link)
	if err != nil {
		return results.Disk{}, fmt.Errorf("device %d:%d has no block device in sysfs (a network, overlay or pseudo filesystem?): %w", major, minor, err)
	}
	if filepath.IsAbs(target) {
		target = filepath.Join(root, target)
	} else {
		target = filepath.Join(filepath.Dir(link), target)
	}
	if _, err := os.Stat(filepath.Join(target, "partition")); err == nil {
		target = filepath.Dir(target)
	}
	rel, err := filepath.Rel(root, target)
	if err != nil {
		return results.Disk{}, err
	}
	return readDisk(root, rel), nil
}

// readDisk reads the block device at root/dir.
func readDisk(root, dir string) results.Disk {
	name := filepath.Base(dir)
	q := func(f string) string { return readLine(root, filepath.Join(dir, "queue", f)) }
	d := results.Disk{
		Name:         name,
		Model:        readLine(root, filepath.Join(dir, "device/model")),
		NVMe:         strings.HasPrefix(name, "nvme"),
		Rotational:   q("rotational") == "1",
		Scheduler:    ParseScheduler(q("scheduler")),
		NrRequests:   atoi(q("nr_requests")),
		MaxSectorsKB: atoi(q("max_sectors_kb")),
		LogicalBlock: atoi(q("logical_block_size")),
		SizeBytes:    int64(atoi(readLine(root, filepath.Join(dir, "size")))) * 512,
	}
	if drv, err := os.Readlink(filepath.Join(root, dir, "device/driver")); err == nil {
		d.Driver = filepath.Base(drv)
	}
	if mq, err := os.ReadDir(filepath.Join(root, dir, "mq")); err == nil {
		d.HWQueues = len(mq)
	}
	return d
}

// ParseScheduler returns the active scheduler of a queue/scheduler file
// ("none [mq-deadline] kyber" gives mq-deadline; a lone name is itself).
func ParseScheduler(s string) string {
	if i := strings.IndexByte(s, '['); i >= 0 {
		if j := strings.IndexByte(s[i:], ']'); j > 0 {
			return s[i+1 : i+j]
		}
	}
	return strings.TrimSpace(s)
}

// DiskText describes a disk in one line for logs and rows' reasons.
func DiskText(d results.Disk) string {
	var parts []string
	if d.Model != "" {
		parts = append(parts, d.Model)
	}
	if d.Driver != "" {
		parts = append(parts, d.Driver)
	}
	kind := "not NVMe"
	if d.NVMe {
		kind = "NVMe"
	}
	if d.Rotational {
		kind += ", rotational"
	}
	parts = append(parts, kind)
	if d.Scheduler != "" {
		parts = append(parts, "scheduler "+d.Scheduler)
	}
	if d.NrRequests > 0 {
		parts = append(parts, fmt.Sprintf("nr_requests %d", d.NrRequests))
	}
	if d.HWQueues > 0 {
		parts = append(parts, fmt.Sprintf("hw queues %d", d.HWQueues))
	}
	if d.MaxSectorsKB > 0 {
		parts = append(parts, fmt.Sprintf("max request %d KiB", d.MaxSectorsKB))
	}
	return d.Name + " (" + strings.Join(parts, ", ") + ")"
}

func atoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}
