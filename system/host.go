package system

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"

	"github.com/kvtier/kvtier/results"
	"github.com/kvtier/kvtier/system/meminfo"
)

func init() {
	Register(Collector{Name: "host", Order: 0, Collect: collectHost})
}

// collectHost fills m.Host from procfs and sysfs under c.Root and records
// the host backend, which is always available.
func collectHost(c Config, m *results.Manifest) error {
	root := c.Root
	h := &m.Host
	h.Arch = runtime.GOARCH
	h.GoVersion = runtime.Version()
	h.Hostname = readLine(root, "proc/sys/kernel/hostname")
	if h.Hostname == "" && root == "/" {
		h.Hostname, _ = os.Hostname()
	}
	h.Kernel = readLine(root, "proc/sys/kernel/osrelease")
	for _, p := range []string{"etc/os-release", "usr/lib/os-release"} {
		if b, err := os.ReadFile(filepath.Join(root, p)); err == nil {
			h.OS = ParseOSRelease(string(b))
			break
		}
	}
	if b, err := os.ReadFile(filepath.Join(root, "proc/cpuinfo")); err == nil {
		h.CPUModel, h.CPUs = ParseCPUInfo(string(b))
	}
	if h.CPUs == 0 && root == "/" {
		h.CPUs = runtime.NumCPU()
	}
	h.NUMANodes = NUMANodes(root)
	if b, err := os.ReadFile(filepath.Join(root, "proc/meminfo")); err == nil {
		if kb, ok := meminfo.Parse(string(b), "MemTotal"); ok {
			h.MemoryBytes = kb * 1024
		}
	}
	detail := fmt.Sprintf("CPU stand-in: %d CPUs", h.CPUs)
	if h.CPUModel != "" {
		detail = fmt.Sprintf("CPU stand-in: %s, %d CPUs", h.CPUModel, h.CPUs)
	}
	m.Backends = append(m.Backends, results.BackendStatus{Name: "host", Available: true, Detail: detail})
	return nil
}

// readLine returns the first line of root/rel, trimmed, or "".
func readLine(root, rel string) string {
	b, err := os.ReadFile(filepath.Join(root, rel))
	if err != nil {
		return ""
	}
	s, _, _ := strings.Cut(string(b), "\n")
	return strings.TrimSpace(s)
}

// ParseOSRelease returns PRETTY_NAME of an os-release file, else NAME
// and VERSION_ID.
func ParseOSRelease(s string) string {
	kv := map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(s))
	for sc.Scan() {
		k, v, ok := strings.Cut(strings.TrimSpace(sc.Text()), "=")
		if !ok {
			continue
		}
		if u, err := strconv.Unquote(v); err == nil {
			v = u
		} else {
			v = strings.Trim(v, `"'`)
		}
		kv[k] = v
	}
	if p := kv["PRETTY_NAME"]; p != "" {
		return p
	}
	return strings.TrimSpace(kv["NAME"] + " " + kv["VERSION_ID"])
}

// ParseCPUInfo returns the CPU model and the number of logical CPUs in a
// /proc/cpuinfo text.
func ParseCPUInfo(s string) (model string, cpus int) {
	sc := bufio.NewScanner(strings.NewReader(s))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		switch strings.TrimSpace(k) {
		case "processor":
			cpus++
		case "model name", "Model", "cpu model":
			if model == "" {
				model = strings.TrimSpace(v)
			}
		}
	}
	return model, cpus
}

var nodeDir = regexp.MustCompile(`^node[0-9]+$`)

// HasNUMANode reports whether root/sys/devices/system/node holds node;
// known is false where that directory is not there to say.
func HasNUMANode(root string, node int) (has, known bool) {
	dir := filepath.Join(root, "sys/devices/system/node")
	if _, err := os.Stat(dir); err != nil {
		return false, false
	}
	_, err := os.Stat(filepath.Join(dir, "node"+strconv.Itoa(node)))
	return err == nil, true
}

// NUMANodes counts the NUMA nodes under root/sys/devices/system/node; a
// machine without that directory has one.
func NUMANodes(root string) int {
	ents, err := os.ReadDir(filepath.Join(root, "sys/devices/system/node"))
	if err != nil {
		return 1
	}
	n := 0
	for _, e := range ents {
		if e.IsDir() && nodeDir.MatchString(e.Name()) {
			n++
		}
	}
	return max(n, 1)
}
