package main

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/kvtier/kvtier/cli"
	"github.com/kvtier/kvtier/harness"
	"github.com/kvtier/kvtier/results"
	"github.com/kvtier/kvtier/serving"
	"github.com/kvtier/kvtier/vllmsim"
)

// runStdin runs kvtier command name with args, reading stdin.
func runStdin(t *testing.T, stdin string, name string, args ...string) (int, string, string) {
	t.Helper()
	c, ok := cli.Lookup(name)
	if !ok {
		t.Fatalf("no command %s", name)
	}
	var stdout, stderr strings.Builder
	code := c.Run(context.Background(), &cli.Call{Command: c, Args: args, Stdin: strings.NewReader(stdin), Stdout: &stdout, Stderr: &stderr, Getenv: os.Getenv})
	return code, stdout.String(), stderr.String()
}

func readDoc(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("../..", path))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestTraceReadsStdin: `kvtier trace -` reads the trace from standard
// input, as bench2csv - does, and so does plan, which reads it once.
func TestTraceReadsStdin(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path, n := genTrace(t, dir)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"trace", "-"}, {"plan", "-", "--sim"}} {
		out := filepath.Join(dir, args[0])
		code, _, stderr := runStdin(t, string(data), args[0], append(args[1:], "--out", out, "-q")...)
		if code != exitOK {
			t.Fatalf("%s: exit %d: %s", strings.Join(args, " "), code, stderr)
		}
		rows, _, err := results.ReadCSV(filepath.Join(out, "trace.csv"))
		if err != nil {
			t.Fatal(err)
		}
		if got := metricRow(t, rows, "requests").Get("value"); got != strconv.Itoa(n) {
			t.Errorf("%s: requests %s, want %d", args[0], got, n)
		}
	}
	// Integers are written as integers: no 1.154048e+06 in any CSV.
	for _, f := range []string{"trace/trace.csv", "trace/trace_curve.csv", "plan/plan.csv", "plan/plan_costs.csv"} {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		if m := regexp.MustCompile(`,-?[0-9.]+e\+[0-9]+`).Find(b); m != nil {
			t.Errorf("%s holds %q, an exponent where digits belong", f, m)
		}
	}
}

// TestBench2CSVSaysWhere: with --out FILE.csv (deprecated) the count line
// names the file; -h names the units it converts to.
func TestBench2CSVSaysWhere(t *testing.T) {
	t.Parallel()
	out := filepath.Join(t.TempDir(), "rows.csv")
	in := "BenchmarkTiers/tier=host/layout=blockwise/prefix=16-2 \t 1 \t 1000 ns/op\n"
	code, _, stderr := runStdin(t, in, "bench2csv", "--out", out, "--backend", "host")
	if code != exitOK || !strings.Contains(stderr, "1 row to "+out+"\n") {
		t.Errorf("exit %d, stderr %q: want the count and %s", code, stderr, out)
	}
	_, help, _ := runCLI(t, "help", "bench2csv")
	_, helpErr, _ := runCLI(t, "bench2csv", "-h")
	for _, h := range []string{help, helpErr} {
		if strings.Contains(h, "MB/s\ngbps") || strings.Contains(h, "MB/s gbps") {
			t.Errorf("help says %q", "MB/s gbps")
		}
	}
}

// TestGPUFlagNotDropped: --gpu 3 that the host backend auto falls back to
// cannot honour is said, on stderr and in the manifest.
func TestGPUFlagNotDropped(t *testing.T) {
	t.Parallel()
	out := filepath.Join(t.TempDir(), "run")
	_, stderr := mustRunCLI(t, "sweep", "--backend", "host", "--gpu", "3", "--tiers", "host", "--model-config", "testdata/tiny_config.json",
		"--prefix", "16", "--reps", "1", "--warmup", "0", "--out", out, "-q")
	const want = "--gpu 3 not used: the host backend has no GPUs"
	if !strings.Contains(stderr, want) {
		t.Errorf("stderr lacks %q:\n%s", want, stderr)
	}
	m, err := results.ReadManifest(filepath.Join(out, "manifest.json"))
	if err != nil || !slices.Contains(m.Warnings, want) || m.Version != harness.Version() {
		t.Errorf("manifest: %v; want the warning %q and version %s", err, want, harness.Version())
	}
}

// TestServersDocCoversFamilies: docs/servers.md gives one kvtier command
// line per server family (TestDocCommandsParse parses them).
func TestServersDocCoversFamilies(t *testing.T) {
	t.Parallel()
	lines := strings.Split(readDoc(t, "docs/servers.md"), "\n")
	for _, name := range serving.Families() {
		if name == serving.FamilyOpenAI {
			continue
		}
		title := serving.TraitsOf(name).Title
		found := false
		for i, l := range lines[:len(lines)-1] {
			if strings.HasPrefix(l, "# "+title+": ") && strings.HasPrefix(lines[i+1], "bin/kvtier ") {
				found = true
			}
		}
		if !found {
			t.Errorf("docs/servers.md: no \"# %s: SERVER COMMAND\" line followed by a kvtier command line", title)
		}
	}
}

// simClaim matches the documentation's list of the commands that take
// --sim.
var simClaim = regexp.MustCompile("`--sim` of ([a-z ,]+)")

// benchCount matches the -count of a go test -bench line.
var benchCount = regexp.MustCompile(`-bench [^\n]*-count[ =]([0-9]+)`)

// TestDocsSlips keeps the small things true: the test timeout the docs
// show is the Makefile's, no "...:" introduces nothing, the commands said
// to take --sim take it, and gpu-check.sh asks for no compiler flags.
func TestDocsSlips(t *testing.T) {
	t.Parallel()
	mk := regexp.MustCompile(`test -race -count=1 -timeout ([0-9]+m)`).FindStringSubmatch(readDoc(t, "Makefile"))
	if mk == nil || !strings.Contains(readDoc(t, "docs/testing.md"), "-timeout "+mk[1]+" ") {
		t.Errorf("docs/testing.md does not show the Makefile's test timeout %v", mk)
	}
	if s := readDoc(t, "scripts/gpu-check.sh"); strings.Contains(s, "-Wno-") {
		t.Error("scripts/gpu-check.sh still asks for compiler flags kvtier does not need")
	}
	// Install says what to do with a clone before the @latest line.
	readme := readDoc(t, "README.md")
	build, latest := strings.Index(readme, "make build"), strings.Index(readme, "cmd/kvtier@latest")
	if build < 0 || latest < 0 || build > latest || !strings.Contains(readme, "go install ./cmd/kvtier") || !strings.Contains(readme, "bin/kvtier") {
		t.Error("README's Install does not say, before @latest, that a clone gives bin/kvtier with make build, or go install ./cmd/kvtier")
	}
	files, _ := filepath.Glob("../../docs/*.md")
	for _, f := range append(files, "../../README.md") {
		b, _ := os.ReadFile(f)
		checkDanglingColon(t, filepath.Base(f), string(b))
		// benchstat needs 6 samples or more for a confidence interval.
		for _, m := range benchCount.FindAllStringSubmatch(string(b), -1) {
			if n, _ := strconv.Atoi(m[1]); n < 6 {
				t.Errorf("%s: go test -bench ... -count %s: benchstat needs 6 or more", filepath.Base(f), m[1])
			}
		}
		for _, m := range simClaim.FindAllStringSubmatch(string(b), -1) {
			for _, name := range strings.FieldsFunc(m[1], func(r rune) bool { return r == ',' || r == ' ' }) {
				if name == "and" {
					continue
				}
				c, ok := cli.Lookup(name)
				if !ok || !strings.Contains(usageOf(t, c), "--sim") {
					t.Errorf("%s: says %s takes --sim", filepath.Base(f), name)
				}
			}
		}
	}
}

// usageOf returns the -h output of command c.
func usageOf(t *testing.T, c *cli.Command) string {
	t.Helper()
	_, _, stderr := runCLI(t, c.Name, "-h")
	return stderr
}

// checkDanglingColon fails a prose line ending in ':' followed by a
// heading or the end of the file: an introduction to nothing.
func checkDanglingColon(t *testing.T, name, doc string) {
	t.Helper()
	lines := strings.Split(doc, "\n")
	fence := false
	for i, l := range lines {
		if strings.HasPrefix(l, "```") {
			fence = !fence
			continue
		}
		if fence || !strings.HasSuffix(strings.TrimSpace(l), ":") || strings.HasPrefix(l, "#") {
			continue
		}
		j := i + 1
		for j < len(lines) && strings.TrimSpace(lines[j]) == "" {
			j++
		}
		if j == len(lines) || strings.HasPrefix(lines[j], "#") {
			t.Errorf("%s:%d: %q introduces nothing", name, i+1, l)
		}
	}
}

// TestVersionSameEverywhere: --version, info and the manifest (so the
// report) say the same version; info said "unknown" where --version said
// "(devel)".
func TestVersionSameEverywhere(t *testing.T) {
	t.Parallel()
	v := harness.Version()
	if v == "" || strings.Contains(v, "unknown") {
		t.Fatalf("harness.Version() = %q", v)
	}
	stdout, _ := mustRunCLI(t, "--version")
	if !strings.HasPrefix(stdout, "kvtier "+v+" ") {
		t.Errorf("--version says %q, want kvtier %s and the Go version", stdout, v)
	}
	stdout, _ = mustRunCLI(t, "info")
	if first, _, _ := strings.Cut(stdout, "\n"); first != "kvtier "+v {
		t.Errorf("info says %q, want kvtier %s", first, v)
	}
}

// TestBench2CSVSkipLines: the skip lines ./bench prints become
// status=skipped rows with the sweep's reason, once per configuration
// however often -count repeats them, labelled by the run's lines only;
// go test -v's own SKIP lines are not rows.
func TestBench2CSVSkipLines(t *testing.T) {
	t.Parallel()
	const hbm = "no device memory on the host backend (the DRAM stand-in would duplicate the host tier); run with --backend cuda"
	in := "backend: host\nmodel: qwen3-coder-30b-a3b\nblock_tokens: 16\nblock_bytes: 1572864\npath: dram-to-dram (host stand-in)\n" +
		"--- SKIP: BenchmarkTiers/tier=hbm/layout=layerwise/copy=percopy/prefix=1024: " + hbm + "\n" +
		"BenchmarkTiers/tier=host/layout=layerwise/copy=percopy/prefix=1024-2 \t 2 \t 76617541 ns/op \t 1313.84 MB/s\n" +
		"--- SKIP: BenchmarkTiers/tier=recompute/prefix=8192: estimated 49,490 s per rep exceeds the budget of 30s\n" +
		"--- SKIP: BenchmarkTiers/tier=hbm/layout=layerwise/copy=percopy/prefix=1024: " + hbm + "\n" +
		"--- SKIP: BenchmarkTiers/tier=hbm\n    bench_test.go:240: " + hbm + "\n"
	code, stdout, stderr := runStdin(t, in, "bench2csv")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	tab, err := results.ParseTable([]byte(stdout), "stdout")
	if err != nil {
		t.Fatal(err)
	}
	rows := tab.Rows
	var skipped []results.Row
	for _, r := range rows {
		if r.Status == results.StatusSkipped {
			skipped = append(skipped, r)
		}
	}
	if len(rows) != 3 || len(skipped) != 2 {
		t.Fatalf("%d rows (%d skipped), want the ok row and two skipped:\n%s", len(rows), len(skipped), stdout)
	}
	h := skipped[0]
	if h.Tier != "hbm" || h.Reason != hbm || h.PrefixTokens != 1024 || h.Backend != "host" || h.Get("path") != "" || h.Layout != "layerwise" {
		t.Errorf("hbm skip row %+v", h)
	}
	if r := skipped[1]; r.Tier != "recompute" || r.PrefixTokens != 8192 || !strings.Contains(r.Reason, "exceeds the budget of 30s") {
		t.Errorf("recompute skip row %+v", r)
	}
}

// TestHelpFitsAndGroups: every command's -h at COLUMNS=100 keeps every
// line within 100 columns, starts "Usage: kvtier", lists its flags
// under headings (a line at column 0 ending in ':'), the shared groups in
// the same order in every command; kvtier sweep's tier options sit under
// their tier's heading.
func TestHelpFitsAndGroups(t *testing.T) {
	t.Parallel()
	var order []string
	for _, g := range cli.Groups() {
		order = append(order, g.Heading+":")
	}
	for _, c := range cli.Commands() {
		var stderr strings.Builder
		c.Run(context.Background(), &cli.Call{Command: c, Args: []string{"-h"}, Stdin: strings.NewReader(""), Stdout: &stderr, Stderr: &stderr,
			Getenv: func(k string) string {
				if k == cli.EnvColumns {
					return "100"
				}
				return ""
			}})
		help := stderr.String()
		if !strings.HasPrefix(help, "Usage: kvtier "+c.Name) {
			t.Errorf("%s -h starts %q", c.Name, help[:min(len(help), 30)])
		}
		last := -1
		for i, l := range strings.Split(help, "\n") {
			if n := len([]rune(l)); n > 100 {
				t.Errorf("%s -h line %d is %d columns: %q", c.Name, i+1, n, l)
			}
			if j := slices.Index(order, l); j >= 0 {
				if j < last {
					t.Errorf("%s -h lists %s after %s", c.Name, l, order[last])
				}
				last = j
			}
		}
		if strings.Contains(help, "\n      --") && !strings.Contains(help, "\nFlags:\n") && last < 0 {
			t.Errorf("%s -h lists flags under no heading", c.Name)
		}
	}
	_, _, sweepHelp := runCLI(t, "sweep", "-h")
	for _, h := range []string{"\nRemote tier:\n      --conns", "\nDisk tier:\n", "\nOutput:\n", "\nBackend:\n"} {
		if !strings.Contains(sweepHelp, h) {
			t.Errorf("sweep -h lacks %q", h)
		}
	}
}

// TestOneMessagePerFlag: a missing --base-url is said once; a misspelt
// flag within two edits gets a suggestion, a renamed one its new name.
func TestOneMessagePerFlag(t *testing.T) {
	t.Parallel()
	code, _, stderr := runCLI(t, "probe")
	if code != exitUsage || strings.Count(stderr, "--base-url") != 1 {
		t.Errorf("probe without flags: exit %d, %q: want --base-url said once", code, stderr)
	}
	code, _, stderr = runCLI(t, "probe", "--endpiont", "http://127.0.0.1:1")
	if code != exitUsage || !strings.Contains(stderr, `(did you mean "--base-url"?)`) {
		t.Errorf("--endpiont: exit %d, %q", code, stderr)
	}
}

// quickStartKinds name the kinds of line the README's quick start shows,
// so that its shape can be compared with a run's: what each line is, in
// what order, and how often.
var quickStartKinds = []struct {
	kind string
	re   *regexp.Regexp
}{
	{"writing", regexp.MustCompile(`^kvtier probe: writing \S+$`)},
	{"overhead", regexp.MustCompile(`^kvtier probe: client overhead .*: [0-9.,]+ (ns|µs|ms|s)$`)},
	{"estimate", regexp.MustCompile(`^kvtier probe: \d+ configurations × \d+ reps, estimated \S+ from the simulator's cost model .*$`)},
	{"server", regexp.MustCompile(`^kvtier probe: \S+ at http://(127\.0\.0\.1:\d+|sim-\d+) \(block size \d+, .*\)$`)},
	// A loaded machine makes the simulator lag: the rep then says it is
	// not verified, and why.
	{"rep", regexp.MustCompile(`^probe (miss|gpu|cpu) +\d+ tokens rep \d+: ttft [0-9.,]+ (µs|ms|s) (verified by \S+|NOT verified: .*)$`)},
	{"progress", regexp.MustCompile(`^kvtier probe: \[\d+/\d+\] (\w+ \d+ tokens|waiting for .*) \(.*elapsed.*\)$`)},
	{"table title", regexp.MustCompile(`^kvtier probe: TTFT p50 of verified requests \(simulated\)$`)},
	{"table header", regexp.MustCompile(`^ +L +miss +gpu +cpu +remote +miss/cpu +cpu/gpu +miss/remote$`)},
	{"table row", regexp.MustCompile(`^ +\d+k( +\S+( \S+)?){7}$`)},
	{"wrote", regexp.MustCompile(`^kvtier probe: wrote \S+ \(probe\.csv, probe_summary\.csv\)$`)},
	{"path", regexp.MustCompile(`^\S+/probe\.csv$`)},
	{"elided", regexp.MustCompile(`^… +\(.*\)$`)},
}

// lineKinds returns the kind of each line, or fails naming a line of no
// kind; repeated kinds are kept, as the repetitions are part of the shape.
func lineKinds(t *testing.T, where string, lines []string) []string {
	t.Helper()
	var out []string
	for _, l := range lines {
		kind := ""
		for _, k := range quickStartKinds {
			if k.re.MatchString(l) {
				kind = k.kind
				break
			}
		}
		if kind == "" && strings.HasPrefix(l, "kvtier probe: warning: ") {
			continue // a loaded machine's, not part of the shape
		}
		if kind == "" {
			t.Errorf("%s: a line of no kind the probe prints: %q", where, l)
		}
		out = append(out, kind)
	}
	return out
}

// shapeOf is the order of kinds, runs of one kind as one and the tiers'
// alike (rep, progress) groups as one.
func shapeOf(kinds []string) string {
	s := strings.Join(slices.Compact(slices.Clone(kinds)), ",")
	return regexp.MustCompile(`(rep,progress,)+`).ReplaceAllString(s, "rep,progress,")
}

// quickStartProbe is the README's quick start command.
const quickStartProbe = "kvtier probe --sim --prefix 32k --tiers miss,gpu,cpu --out r/probe"

// TestReadmeQuickStartShape: the README's quick start shows what its
// command prints. The test runs that very command (its --out in a
// temporary directory) with the embedded simulators on an in-memory
// network in a synctest bubble, so that the simulated minutes pass on
// the virtual clock, and compares: every line one the probe writes, the
// kinds in the run's order, as many reps of each tier as the run's, its
// [i/N] lines, stdout's last line the CSV's path, and the estimate the
// README states (its shown line, and its prose) the run's own, from the
// simulator's cost model that the ETA weighs by. Before, the README
// showed 3 reps, no progress line and no path, and said "(1 minute.)".
func TestReadmeQuickStartShape(t *testing.T) {
	t.Parallel()
	readme := readDoc(t, "README.md")
	i := strings.Index(readme, "$ "+quickStartProbe+"\n")
	j := strings.Index(readme, "$ kvtier report r/probe\n")
	if i < 0 || j < i {
		t.Fatal("README has no quick start probe block")
	}
	shown := strings.Split(strings.TrimSpace(readme[i:j]), "\n")[1:]
	args := strings.Fields(quickStartProbe)[1:]
	args[len(args)-1] = filepath.Join(t.TempDir(), "r", "probe")
	var stdout, stderr strings.Builder
	synctest.Test(t, func(t *testing.T) {
		var net vllmsim.MemNet
		defer net.Close()
		if code := dispatch(vllmsim.WithNet(t.Context(), &net), &stdout, &stderr, args); code != exitOK {
			t.Fatalf("probe: exit %d: %s", code, stderr.String())
		}
	})
	run := strings.Split(strings.TrimSpace(stderr.String()+stdout.String()), "\n")
	kinds, runKinds := lineKinds(t, "README", shown), lineKinds(t, "the run", run)
	if a, b := shapeOf(runKinds), shapeOf(slices.DeleteFunc(slices.Clone(kinds), func(k string) bool { return k == "elided" })); a != b {
		t.Errorf("the run's lines are %s; the README's %s", a, b)
	}
	// Every miss rep is shown, each tier's end line and the estimate;
	// the other tiers' reps and the floods' lines are elided alike.
	for _, re := range []string{`^probe miss `, `^kvtier probe: \[\d+/\d+\] \w+ \d+ tokens`, `^kvtier probe: \d+ configurations`} {
		if a, b := countMatch(run, re), countMatch(shown, re); a != b {
			t.Errorf("%s: %d lines in the run, %d in the README", re, a, b)
		}
	}
	est := regexp.MustCompile(`estimated (\S+) from`).FindStringSubmatch(stderr.String())
	if est == nil || !strings.Contains(readme[i:j], est[0]) || !strings.Contains(readme[j:], "estimate, "+est[1]+",") {
		t.Errorf("the run estimates %v; the README's shown line and its prose must say the same", est)
	}
	if shown[len(shown)-1] != "r/probe/probe.csv" {
		t.Error("the README's quick start lacks the CSV's path on stdout")
	}
	// On the virtual clock the figures are the model's, which the prose
	// gives beside the loaded machine's.
	if row := regexp.MustCompile(`(?m)^ +32k +\S+ s +(\S+ \S+) +(\S+ \S+) `).FindStringSubmatch(stderr.String()); row == nil ||
		!strings.Contains(strings.Join(strings.Fields(readme[j:]), " "), "gives "+row[2]+" for the CPU hit and "+row[1]+" for the GPU hit") {
		t.Errorf("the model's GPU and CPU hits on the virtual clock, %q, are not the README's", row)
	}
	if t.Failed() {
		t.Logf("the run printed:\n%s", strings.Join(run, "\n"))
	}
}

// countMatch is how many of lines the regular expression re matches.
func countMatch(lines []string, re string) int {
	return len(slices.DeleteFunc(slices.Clone(lines), func(l string) bool { return !regexp.MustCompile(re).MatchString(l) }))
}
