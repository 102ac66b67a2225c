package rdma

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// classDir is where sysfs lists RDMA devices, under root.
func classDir(root string) string { return filepath.Join(root, "sys/class/infiniband") }

// readString reads a sysfs file, trimmed; "" when unreadable.
func readString(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// ParseRate parses sysfs's port rate ("200 Gb/sec (4X HDR)") in Gb/s.
func ParseRate(s string) (float64, error) {
	f := strings.Fields(s)
	if len(f) < 2 || !strings.HasPrefix(f[1], "Gb/s") {
		return 0, fmt.Errorf("rdma: rate %q not in Gb/sec", s)
	}
	return strconv.ParseFloat(f[0], 64)
}

// ParseState turns sysfs's "4: ACTIVE" into "ACTIVE".
func ParseState(s string) string {
	if _, after, ok := strings.Cut(s, ":"); ok {
		return strings.TrimSpace(after)
	}
	return strings.TrimSpace(s)
}

// RoCEMTU is the active IB MTU in bytes of a RoCE port over a netdev of
// the given MTU: the largest IB MTU that fits after the RoCE v2 headers
// (the kernel's iboe_get_mtu), 0 if unknown.
func RoCEMTU(netdevMTU int) int {
	if netdevMTU <= 0 {
		return 0
	}
	return MTUBytes(IBMTU(netdevMTU - 96))
}

// portDir is a port's sysfs directory under root.
func portDir(root, dev string, port int) string {
	return filepath.Join(classDir(root), dev, "ports", strconv.Itoa(port))
}

// PortRate reads a port's line rate in Gb/s from sysfs under root.
func PortRate(root, dev string, port int) (float64, error) {
	return ParseRate(readString(filepath.Join(portDir(root, dev, port), "rate")))
}

// ReadGIDTable reads a port's GID table with each entry's type; entries
// the kernel cannot show (empty slots) are left out.
func ReadGIDTable(root, dev string, port int) ([]GIDEntry, error) {
	pdir := portDir(root, dev, port)
	ents, err := os.ReadDir(filepath.Join(pdir, "gids"))
	if err != nil {
		return nil, fmt.Errorf("rdma: GID table of %s port %d: %w", dev, port, err)
	}
	var out []GIDEntry
	for _, e := range ents {
		i, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		g := readString(filepath.Join(pdir, "gids", e.Name()))
		if g == "" {
			continue
		}
		out = append(out, GIDEntry{Index: i, GID: g, Type: readString(filepath.Join(pdir, "gid_attrs/types", e.Name())),
			NetDev: readString(filepath.Join(pdir, "gid_attrs/ndevs", e.Name()))})
	}
	sort.Slice(out, func(a, b int) bool { return out[a].Index < out[b].Index })
	return out, nil
}
