package report_test

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kvtier/kvtier/analysis"
	"github.com/kvtier/kvtier/report"
	"github.com/kvtier/kvtier/report/reporttest"
	"github.com/kvtier/kvtier/results"
)

// A report is shared: the home directory in a library's search paths or
// a command line is written as ~, in Markdown and in HTML, and a
// directory that only starts with the same name is left alone.
func TestReportHidesHome(t *testing.T) {
	t.Parallel()
	dir := reporttest.TempDir(t, reporttest.Options{Seed: 1, Small: true})
	m, err := results.ReadManifest(filepath.Join(dir, "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	const home = "/home/ada"
	m.Backends = append(m.Backends, results.BackendStatus{Name: "cublas", Reason: "cannot load libcublas (tried libcublas.so.12: not found by the loader; none of them in /home/ada/.local/lib/python3.11/site-packages/nvidia/cublas/lib)"})
	m.Command = []string{"kvtier", "sweep", "--out", "/home/ada/runs/a", "--note", "/home/adam/x"}
	if err := results.WriteManifest(filepath.Join(dir, "manifest.json"), m); err != nil {
		t.Fatal(err)
	}
	r, err := analysis.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	var md, html bytes.Buffer
	report.Markdown(&md, []*analysis.Run{r}, report.Options{Home: home})
	if err := report.HTML(&html, []*analysis.Run{r}, report.Options{Home: home + "/"}); err != nil {
		t.Fatal(err)
	}
	for name, s := range map[string]string{"markdown": md.String(), "html": html.String()} {
		if strings.Contains(s, "/home/ada/") || !strings.Contains(s, "~/.local/lib/python3.11") || !strings.Contains(s, "~/runs/a") || !strings.Contains(s, "/home/adam/x") {
			t.Errorf("%s: the home directory is not ~ (or another one was changed)", name)
		}
	}
}
