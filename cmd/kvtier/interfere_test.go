package main

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kvtier/kvtier/analysis"
	"github.com/kvtier/kvtier/harness/mb1"
	"github.com/kvtier/kvtier/internal/loadcheck"
	"github.com/kvtier/kvtier/results"
)

// TestInterfereCommandSim runs MB1 on the simulator: three arms of
// verified rows, the tokens' file, the manifest; and its closing table
// is the one the README shows as the answer of its third question
// (the same title and header, a row of as many columns).
func TestInterfereCommandSim(t *testing.T) {
	out := filepath.Join(t.TempDir(), "run")
	probe := loadcheck.Start()
	stdout, stderr := mustRunCLI(t, "interfere", "--sim", "--api", "chat", "--decode", "1",
		"--prefill", "1k", "--reps", "1", "--inject-after", "30ms", "--chunk-label", "4k", "--out", out)
	load := probe.Stop()
	if strings.TrimSpace(stdout) != filepath.Join(out, mb1.File) {
		t.Errorf("stdout %q", stdout)
	}
	readme := readDoc(t, "README.md")
	title := "kvtier interfere: decode penalty of a prefill, p50 over reps (simulated)\n"
	i, j := strings.Index(readme, title), strings.Index(stderr, title)
	if i < 0 {
		t.Fatal("the README does not show MB1's closing table")
	}
	// A loaded machine can make the sim lag in the one rep: its row is
	// then left out, and with it the table.
	if j < 0 && !strings.Contains(stderr, "left out of the table") {
		t.Fatalf("no closing table:\n%s", stderr)
	}
	shown, run := strings.SplitN(readme[i:], "\n", 4), strings.SplitN(stderr[max(j, 0):], "\n", 4)
	cells := func(row string) int { return len(regexp.MustCompile(`\s{2,}`).Split(strings.TrimSpace(row), -1)) }
	if j >= 0 && (shown[1] != run[1] || cells(shown[2]) != cells(run[2])) {
		t.Errorf("the README shows\n%s\n%s\nthe run prints\n%s\n%s", shown[1], shown[2], run[1], run[2])
	}
	rows, _, err := results.ReadCSV(filepath.Join(out, mb1.File))
	if err != nil {
		t.Fatal(err)
	}
	arms := map[string]results.Row{}
	for _, r := range rows {
		arms[r.Get("arm")] = r
		if r.Status != results.StatusOK || r.Get("chunk_label") != "4096" || r.Get("simulated") != "true" ||
			r.Get("api") != "chat" || r.Get("token_counting") != "token_ids" || r.Get("penalty_base") != "baseline" || r.Get("server_version") != "0.18.1" {
			t.Errorf("%s: %s %q %v", r.Get("arm"), r.Status, r.Reason, r.Extra)
		}
	}
	if len(arms) != 3 {
		t.Fatalf("arms %v, want interfere, control and baseline", arms)
	}
	// The penalty is a real-time figure of one rep: where the simulator
	// lagged or this machine did not keep pace (a loaded run once read
	// 1), it is the load's, not the model's.
	if pen := arms["interfere"].Get("penalty"); arms["interfere"].Float("penalty") <= 1 {
		if slices.ContainsFunc(rows, analysis.Lagged) || load.Busy(50*time.Millisecond, 2*time.Millisecond) {
			t.Logf("interfere penalty %s not checked: the simulator lagged or the machine did not keep pace (%v)", pen, load)
		} else {
			t.Errorf("interfere penalty %s", pen)
		}
	}
	toks, header, err := results.ReadCSV(filepath.Join(out, mb1.TokensFile))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(header, ",") != strings.Join(results.Names(mb1.TokenColumns), ",") || len(toks) < 3*40 {
		t.Errorf("mb1_tokens.csv: header %v, %d rows", header, len(toks))
	}
	m, err := results.ReadManifest(filepath.Join(out, "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	if m.Suite != "mb1" || m.Settings["control_endpoint"] == "" || m.Settings["api"] != "chat" || m.Settings["server_version"] != "0.18.1" {
		t.Errorf("manifest %+v", m.Settings)
	}
}

func TestInterfereCommandErrors(t *testing.T) {
	downURL := "http://" + freePort(t)
	tests := []struct {
		name string
		args []string
		want []string
	}{
		{"unreachable", []string{"--base-url", downURL}, []string{"endpoint unreachable: " + downURL}},
		{"no endpoint", nil, []string{"--base-url URL is required"}},
		{"everything wrong", []string{"--base-url", "x", "--decode", "0,a", "--prefill", "2q", "--reps", "0", "--api", "grpc", "--sim-time-scale", "2"},
			[]string{"--base-url", "--decode", "--prefill", "--reps: want 1 to 1000000, got 0", `--api: "grpc"`, "--sim-time-scale: 2: removed"}},
		// Durations are typed: a bad one is refused as the flags parse.
		{"bad duration", []string{"--sim", "--inject-after", "-1s"}, []string{`invalid argument "-1s" for "--inject-after"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("KVTIER_ENDPOINT", "")
			out := filepath.Join(t.TempDir(), "run")
			code, _, stderr := runCLI(t, append([]string{"interfere", "--out", out}, tt.args...)...)
			if code != exitUsage || strings.Count(stderr, "\n") != 1 {
				t.Errorf("exit %d, stderr %q: want exit 2 and one line", code, stderr)
			}
			for _, w := range tt.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr %q does not contain %q", stderr, w)
				}
			}
			if _, err := os.Stat(out); err == nil {
				t.Error("a results directory was created for bad input")
			}
		})
	}
}
