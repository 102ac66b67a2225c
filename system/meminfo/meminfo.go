// Package meminfo reads the kernel's memory counters from
// /proc/meminfo. It needs no cgo, so that the measuring core can ask how
// much memory a run may take without linking the GPU collectors.
package meminfo

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Parse returns the value in kB of field key of a /proc/meminfo text.
func Parse(s, key string) (int64, bool) {
	sc := bufio.NewScanner(strings.NewReader(s))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok || strings.TrimSpace(k) != key {
			continue
		}
		f := strings.Fields(v)
		if len(f) == 0 {
			return 0, false
		}
		n, err := strconv.ParseInt(f[0], 10, 64)
		return n, err == nil
	}
	return 0, false
}

// Available returns the bytes the kernel estimates are available for new
// allocations (MemAvailable of root/proc/meminfo).
func Available(root string) (int64, error) {
	p := filepath.Join(root, "proc/meminfo")
	b, err := os.ReadFile(p)
	if err != nil {
		return 0, fmt.Errorf("meminfo: %w", err)
	}
	kb, ok := Parse(string(b), "MemAvailable")
	if !ok {
		return 0, fmt.Errorf("meminfo: %s has no MemAvailable", p)
	}
	return kb * 1024, nil
}

// NodeFree returns the bytes NUMA node node can give a new allocation
// without swapping or killing: its MemFree plus its inactive file pages,
// which the kernel reclaims first (root/sys/devices/system/node/nodeN/meminfo,
// whose lines read "Node N MemFree:  123 kB").
func NodeFree(root string, node int) (int64, error) {
	p := filepath.Join(root, fmt.Sprintf("sys/devices/system/node/node%d/meminfo", node))
	b, err := os.ReadFile(p)
	if err != nil {
		return 0, fmt.Errorf("meminfo: %w", err)
	}
	prefix := fmt.Sprintf("Node %d ", node)
	free, ok := Parse(string(b), prefix+"MemFree")
	if !ok {
		return 0, fmt.Errorf("meminfo: %s has no MemFree", p)
	}
	file, _ := Parse(string(b), prefix+"Inactive(file)")
	return (free + file) * 1024, nil
}
