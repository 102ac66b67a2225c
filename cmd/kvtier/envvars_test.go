package main

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/kvtier/kvtier/cli"
	"github.com/kvtier/kvtier/harness/mesh"
	"github.com/kvtier/kvtier/peer/peerflag"
	"github.com/kvtier/kvtier/results"
	"github.com/kvtier/kvtier/serving/servingflag"
	"github.com/kvtier/kvtier/tiers/tierflag"
)

// TestEnvInHelp: every command's -h ends with the environment variables
// it reads, each with the flag that wins over it; a command that reads
// none says nothing of the kind. Before, -h named KVTIER_ENDPOINT in one
// flag's text at most, and never the libraries' or NCCL's variables.
func TestEnvInHelp(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		cmd  string
		want []string
	}{
		{"probe", []string{"KVTIER_ENDPOINT", "(--base-url wins over it)", "KVTIER_LIBCUDA"}},
		{"sweep", []string{"KVTIER_TOKEN", "(--token wins over it)", "KVTIER_LIBCUBLAS", "KVTIER_LIBNVML"}},
		{"transfer", []string{"NCCL_IB_TC", "(--ib-tc wins over it)", "NCCL_IB_SL", "KVTIER_LIBIBVERBS"}},
		{"mesh", []string{"SLURM_PROCID", "MASTER_ADDR", "(--rank, --size, --coordinator win over them)"}},
		{"info", []string{"KVTIER_LIBCUDA"}},
		{"report", []string{"HOME", "written as ~"}},
		{"compare", nil},
	} {
		_, _, stderr := runCLI(t, c.cmd, "-h")
		i := strings.Index(stderr, "\nEnvironment")
		if c.want == nil {
			if i >= 0 {
				t.Errorf("%s -h lists an environment it does not read:\n%s", c.cmd, stderr[i:])
			}
			continue
		}
		if i < 0 {
			t.Errorf("%s -h has no Environment section:\n%s", c.cmd, stderr)
			continue
		}
		env := strings.Join(strings.Fields(stderr[i:]), " ") // lines wrapped to the width joined
		for _, w := range c.want {
			if !strings.Contains(env, w) {
				t.Errorf("%s -h environment lacks %q:\n%s", c.cmd, w, stderr[i:])
			}
		}
	}
}

// TestBinaryEnvComplete: every variable the binary reads is in
// cli.BinaryEnv or a command's Env, so that -h and the manifest name it:
// each literal or constant given to a Getenv in package cli, its flag
// groups' packages, cmd/kvtier and the suites' commands, and the NCCL
// variables. The test-only
// KVTIER_TEST_* switches are not in a shipped binary.
func TestBinaryEnvComplete(t *testing.T) {
	t.Parallel()
	known := map[string]bool{}
	for _, e := range cli.BinaryEnv() {
		known[e.Name] = true
	}
	for _, c := range cli.Commands() {
		for _, e := range c.Env {
			known[e.Name] = true
		}
	}
	files, _ := filepath.Glob("*.go")
	var more []string
	for _, dir := range []string{"cli", "tiers/tierflag", "peer/peerflag", "serving/servingflag"} {
		m, _ := filepath.Glob("../../" + dir + "/*.go")
		more = append(more, m...)
	}
	cmds, _ := filepath.Glob("../../harness/*/command.go")
	files = append(append(files, more...), cmds...)
	consts := map[string]string{}
	constRe := regexp.MustCompile(`(\w+)\s*=\s*"([A-Z][A-Z0-9_]+)"`)
	getenvRe := regexp.MustCompile(`[Gg]etenv\(([\w.]+|"[A-Z0-9_]+")\)`)
	var srcs []string
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") || strings.HasSuffix(f, "faults_on.go") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		srcs = append(srcs, string(b))
		for _, m := range constRe.FindAllStringSubmatch(string(b), -1) {
			consts[m[1]] = m[2]
		}
	}
	for _, src := range srcs {
		for _, m := range getenvRe.FindAllStringSubmatch(src, -1) {
			arg := m[1]
			name := strings.Trim(arg, `"`)
			if !strings.HasPrefix(arg, `"`) {
				name = consts[arg[strings.LastIndex(arg, ".")+1:]]
			}
			if name == "" || strings.HasPrefix(name, "KVTIER_TEST_") || strings.HasPrefix(arg, "peer.Env") {
				continue
			}
			if !known[name] {
				t.Errorf("the binary reads %s (Getenv(%s)), which no -h lists", name, arg)
			}
		}
	}
	for _, n := range []string{"NCCL_IB_TC", "NCCL_IB_SL", servingflag.EnvEndpoint, peerflag.EnvToken} {
		if !known[n] {
			t.Errorf("%s is read and not listed", n)
		}
	}
	for _, n := range mesh.LauncherEnv {
		if !known[n] {
			t.Errorf("mesh reads %s and does not list it", n)
		}
	}
}

// TestManifestEnvironment: a run records the variables it read that are
// set in its manifest, the run token redacted, and not those it does not
// read. Before, the manifest recorded no environment at all.
func TestManifestEnvironment(t *testing.T) {
	t.Setenv(peerflag.EnvToken, "s3cret-run-token")
	t.Setenv(tierflag.EnvLibIBVerbs, "/nonexistent/libibverbs.so.1")
	t.Setenv(servingflag.EnvEndpoint, "http://127.0.0.1:1")
	out := filepath.Join(t.TempDir(), "run")
	mustRunCLI(t, "sweep", "--backend", "host", "--tiers", "host", "--layout", "blockwise", "--copy", "percopy",
		"--model-config", "testdata/tiny_config.json", "--prefix", "16", "--reps", "1", "--warmup", "0", "--quiet", "--out", out)
	m, err := results.ReadManifest(filepath.Join(out, "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	env := m.Environment
	if env[peerflag.EnvToken] != "<redacted>" || env[tierflag.EnvLibIBVerbs] != "/nonexistent/libibverbs.so.1" {
		t.Errorf("environment %v", env)
	}
	if _, ok := env[servingflag.EnvEndpoint]; ok {
		t.Errorf("sweep does not read %s, yet its manifest records it: %v", servingflag.EnvEndpoint, env)
	}
	b, _ := os.ReadFile(filepath.Join(out, "manifest.json"))
	if strings.Contains(string(b), "s3cret-run-token") {
		t.Error("the run token is in the manifest")
	}
}

// TestEnvDocumented: docs/gpu-node.md documents every variable under the
// entry point that reads it: the binary's (cli.BinaryEnv and mesh's
// launchers'), scripts/bench.sh's and go test ./bench's, each in its own
// table.
func TestEnvDocumented(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("../../docs/gpu-node.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	i := strings.Index(doc, "## Environment variables")
	if i < 0 {
		t.Fatal("docs/gpu-node.md has no Environment variables section")
	}
	tables := strings.Split(doc[i:], "\n**")
	if len(tables) < 4 {
		t.Fatalf("want three tables (binary, make bench, go test ./bench), got %d parts", len(tables)-1)
	}
	var binary []string
	for _, e := range cli.BinaryEnv() {
		binary = append(binary, e.Name)
	}
	binary = append(binary, mesh.LauncherEnv...)
	sh, _ := os.ReadFile("../../scripts/bench.sh")
	script := regexp.MustCompile(`\$\{(KVTIER_[A-Z_]+|FULL)`).FindAllStringSubmatch(string(sh), -1)
	var bench []string
	srcs, _ := filepath.Glob("../../bench/*.go")
	for _, f := range srcs {
		src, _ := os.ReadFile(f)
		for _, m := range regexp.MustCompile(`"(KVTIER_[A-Z_]+)"`).FindAllStringSubmatch(string(src), -1) {
			bench = append(bench, m[1])
		}
	}
	check := func(table, entry string, names []string) {
		for _, n := range names {
			if !strings.Contains(table, "`"+n+"`") {
				t.Errorf("%s reads %s; its table in docs/gpu-node.md does not say so", entry, n)
			}
		}
	}
	check(tables[1], "the kvtier binary", binary)
	var shNames []string
	for _, m := range script {
		shNames = append(shNames, m[1])
	}
	check(tables[2], "scripts/bench.sh", slices.Compact(shNames))
	check(tables[3], "go test ./bench", bench)
}
