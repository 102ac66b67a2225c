package scripts_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestDepsInstallsOnlyWhatTheBuildLacks runs scripts/deps.sh with stub
// gcc, apt-get, dpkg-query, id and ofed_info first in PATH: apt-get is
// called only where gcc cannot build, as root, without MLNX_OFED, only
// for gcc and libc6-dev in build mode (never the verbs packages), and
// the script says what it installs before it does.
func TestDepsInstallsOnlyWhatTheBuildLacks(t *testing.T) {
	if _, err := os.Stat("/etc/debian_version"); err != nil {
		t.Skip("deps.sh installs on Debian only; this is not Debian")
	}
	t.Parallel()
	for _, c := range []struct {
		name                 string
		mode                 string
		gccWorks, root, ofed bool
		want                 string // apt-get's arguments, "" not called
	}{
		{"gcc works", "build", true, true, false, ""},
		{"gcc missing", "build", false, true, false, "install -y -q --no-install-recommends gcc libc6-dev"},
		{"gcc missing, MLNX_OFED", "build", false, true, true, ""},
		{"gcc missing, not root", "build", false, false, false, ""},
		{"test, MLNX_OFED", "test", true, true, true, "chromium"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			log := filepath.Join(dir, "apt.log")
			stub := func(name, body string) {
				if err := os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			stub("gcc", map[bool]string{true: "exit 0", false: "exit 1"}[c.gccWorks])
			stub("id", map[bool]string{true: "echo 0", false: "echo 1000"}[c.root])
			stub("apt-get", `echo "$@" >>`+log)
			stub("dpkg-query", "exit 1") // nothing installed
			if c.ofed {
				stub("ofed_info", "echo MLNX_OFED_LINUX-24.10")
			}
			cmd := exec.Command("bash", "deps.sh", c.mode)
			cmd.Env = append(os.Environ(), "PATH="+dir+":/usr/bin:/bin")
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("deps.sh %s: %v\n%s", c.mode, err, out)
			}
			got, _ := os.ReadFile(log)
			switch {
			case c.want == "" && len(got) > 0:
				t.Errorf("apt-get called: %s\n%s", got, out)
			case c.want != "" && !strings.Contains(string(got), c.want):
				t.Errorf("apt-get called with %q, want %q\n%s", got, c.want, out)
			case c.want != "" && !strings.Contains(string(out), "deps: installing "):
				t.Errorf("did not say what it installs first:\n%s", out)
			}
			if strings.Contains(string(got), "ibverbs") && (c.mode == "build" || c.ofed) {
				t.Errorf("verbs packages installed: %s", got)
			}
		})
	}
}
