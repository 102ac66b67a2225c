package bench

import (
	"fmt"
	"maps"
	"os"
	"os/exec"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/kvtier/kvtier/harness"
	"github.com/kvtier/kvtier/kv"
	"github.com/kvtier/kvtier/results"
	"github.com/kvtier/kvtier/system"
	"github.com/kvtier/kvtier/tiers"
)

// Go benchmark configuration lines ("key: value", the format benchstat
// and kvtier bench2csv read) label every result with what a sweep or
// transfer row says in its columns: the run's lines (kvtier, model,
// block_tokens, block_bytes, gpu, nic) once, and before each
// configuration's first result the columns that label it and change
// between configurations (rowKeys), an empty value clearing one a
// configuration does not have. benchstat splits its tables by them;
// kvtier bench2csv turns them back into columns.

// rowKeys are the label columns of a configuration printed first, in
// this order; the row's other columns follow, sorted, but for
// notLabels.
var rowKeys = []string{"backend", "transport", "device", "path", "src_mem", "dst_mem", "compute_dtype", "timing",
	"direction", "conns", "line_gb_per_s"}

// notLabels are the columns of a row that are not labels of its
// configuration: the name's parts, what is measured, what varies by
// sample, and what follows from the run's lines.
var notLabels = []string{"suite", "chunk_bytes", "tier", "layout", "copy", "prefix_tokens", "blocks", "bytes", "rep", "seconds", "gb_per_s",
	"status", "reason", "verified", "held", "flops", "tflops", "link_frac", "line_frac", "seed", "peer", "model",
	"t_3gib_s", "t_11_5gib_s"}

var (
	labelsMu sync.Mutex
	labels   = map[string]string{} // the configuration lines in effect
	rowSeen  = map[string]bool{}   // every key printRowLabels has printed
)

// printLabels prints the lines of kv (key, value, key, value, ...) whose
// value differs from the one in effect.
func printLabels(kv ...string) {
	labelsMu.Lock()
	defer labelsMu.Unlock()
	for i := 0; i+1 < len(kv); i += 2 {
		k, v := kv[i], strings.Join(strings.Fields(kv[i+1]), " ")
		if cur, ok := labels[k]; ok && cur == v || !ok && v == "" {
			continue
		}
		labels[k] = v
		if v == "" {
			delete(labels, k)
			fmt.Printf("%s:\n", k)
			continue
		}
		fmt.Printf("%s: %s\n", k, v)
	}
}

// printRowLabels prints the label columns of row, the first sample of
// a configuration: its rowKeys, cleared where the row has none.
func printRowLabels(row results.Row) {
	keys := slices.Clone(rowKeys)
	for _, k := range slices.Sorted(maps.Keys(row.Extra)) {
		if !slices.Contains(keys, k) && !slices.Contains(notLabels, k) {
			keys = append(keys, k)
		}
	}
	labelsMu.Lock()
	for k := range rowSeen {
		if !slices.Contains(keys, k) {
			keys = append(keys, k) // cleared below: this row has no such column
		}
	}
	for _, k := range keys {
		rowSeen[k] = true
	}
	labelsMu.Unlock()
	var kv []string
	for _, k := range keys {
		kv = append(kv, k, row.Cell(k))
	}
	printLabels(kv...)
}

// printRunLabels prints the run's lines: the revision, the model and its
// block geometry (bench2csv derives blocks and bytes from them), the GPU
// of the backend and the RDMA NICs.
func printRunLabels(g kv.Geometry, backend tiers.Backend) {
	gpu := "none"
	if backend.Caps().DeviceMemory {
		gpu = backend.Device()
	}
	printLabels("kvtier", revision(), "model", g.Model, "block_tokens", strconv.Itoa(g.BlockTokens),
		"block_bytes", strconv.FormatInt(g.BlockBytes(), 10), "gpu", gpu, "nic", nics())
}

// nics lists the RDMA NICs sysfs shows, with their rate, or "none".
func nics() string {
	list, err := system.Discover("/")
	if err != nil || len(list) == 0 {
		return "none"
	}
	var s []string
	for _, n := range list {
		s = append(s, fmt.Sprintf("%s/%d %gGb/s", n.Name, n.Port, n.RateGbps))
	}
	return strings.Join(s, ",")
}

// revision is kvtier's revision: the build's stamp where there is one,
// else git's (go test does not stamp test binaries), else "unknown".
func revision() string {
	if v := harness.Version(); v != "unknown" {
		return v
	}
	out, err := exec.Command("git", "rev-parse", "HEAD").Output()
	if err != nil {
		if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
			return bi.Main.Version
		}
		return "unknown"
	}
	rev := strings.TrimSpace(string(out))
	if exec.Command("git", "diff", "--quiet", "HEAD").Run() != nil {
		rev += "+dirty"
	}
	return rev
}

// env returns the environment variable name, trimmed, or def.
func env(name, def string) string {
	if v := strings.TrimSpace(os.Getenv(name)); v != "" {
		return v
	}
	return def
}
