package main

import (
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kvtier/kvtier/vllmsim"
)

// authSim is a simulator that answers only requests carrying the basic
// auth user:hunter2; it returns the base URL with the credentials in it.
func authSim(t *testing.T) string {
	t.Helper()
	s, err := vllmsim.New(vllmsim.Config{GPUBlocks: 512, TimeScale: 0.01, EnablePromptTokensDetails: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if u, p, ok := r.BasicAuth(); !ok || u != "user" || p != "hunter2" {
			http.Error(w, `{"error":{"message":"unauthorized"}}`, http.StatusUnauthorized)
			return
		}
		s.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return strings.Replace(srv.URL, "http://", "http://user:hunter2@", 1)
}

// Credentials in an endpoint's URL are sent as HTTP basic auth and
// written nowhere: not in rows, manifests, REPORT.md, stdout or stderr.
func TestCredentialsRedacted(t *testing.T) {
	t.Parallel()
	url := authSim(t)
	dir := t.TempDir()
	for _, tc := range []struct {
		args []string
		want int
	}{
		{[]string{"probe", "--base-url", url, "--tiers", "miss,gpu", "--prefix", "64", "--reps", "1", "--out", filepath.Join(dir, "probe")}, exitOK},
		{[]string{"interfere", "--base-url", url, "--control-base-url", url, "--decode", "1", "--prefill", "64", "--reps", "1",
			"--decode-tokens", "8000", "--inject-after", "0.1s", "--out", filepath.Join(dir, "mb1")}, exitOK},
		{append([]string{"replay", "--base-url", url, "--out", filepath.Join(dir, "replay")}, smallSessions...), exitOK},
		{[]string{"report", filepath.Join(dir, "probe"), filepath.Join(dir, "mb1"), filepath.Join(dir, "replay")}, exitOK},
		{[]string{"probe", "--base-url", strings.Replace(url, "hunter2", "wrong", 1) + "/v1", "--out", filepath.Join(dir, "refused")}, exitUsage},
	} {
		code, stdout, stderr := runCLI(t, tc.args...)
		if code != tc.want {
			t.Errorf("kvtier %s: exit %d, want %d:\n%s", tc.args[0], code, tc.want, stderr)
		}
		if strings.Contains(stdout+stderr, "hunter2") {
			t.Errorf("kvtier %s said the password:\n%s%s", tc.args[0], stdout, stderr)
		}
	}
	var files int
	filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		files++
		if b, _ := os.ReadFile(path); strings.Contains(string(b), "hunter2") {
			t.Errorf("%s holds the password", path)
		}
		return nil
	})
	if b, _ := os.ReadFile(filepath.Join(dir, "probe", "probe.csv")); files < 10 || !strings.Contains(string(b), "user:***@") {
		t.Errorf("%d files; probe.csv does not name the endpoint redacted:\n%s", files, b)
	}
}
