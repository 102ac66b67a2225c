package system

import (
	"runtime"
	"testing"

	"github.com/kvtier/kvtier/results"
)

func TestCollectHostFixture(t *testing.T) {
	var m results.Manifest
	if err := collectHost(Config{Root: "testdata/host"}, &m); err != nil {
		t.Fatal(err)
	}
	want := results.Host{
		Hostname: "fixture-node", Kernel: "6.8.0-45-generic", OS: "Ubuntu 24.04.1 LTS",
		Arch: runtime.GOARCH, CPUModel: "Intel(R) Xeon(R) Platinum 8480+", CPUs: 4,
		NUMANodes: 2, MemoryBytes: 2113645512 * 1024, GoVersion: runtime.Version(),
	}
	if m.Host != want {
		t.Errorf("Host =\n%+v\nwant\n%+v", m.Host, want)
	}
	if len(m.Backends) != 1 || m.Backends[0].Name != "host" || !m.Backends[0].Available {
		t.Errorf("Backends = %+v", m.Backends)
	}
}

func TestCollectHostEmptyRoot(t *testing.T) {
	var m results.Manifest
	if err := collectHost(Config{Root: t.TempDir()}, &m); err != nil {
		t.Fatal(err)
	}
	if m.Host.Kernel != "" || m.Host.CPUs != 0 || m.Host.NUMANodes != 1 || m.Host.MemoryBytes != 0 {
		t.Errorf("Host from an empty tree = %+v", m.Host)
	}
}

func TestParsers(t *testing.T) {
	tests := []struct{ in, want string }{
		{"NAME=\"Debian GNU/Linux\"\nVERSION_ID=\"13\"\n", "Debian GNU/Linux 13"},
		{"PRETTY_NAME='Rocky Linux 9.4'\n", "Rocky Linux 9.4"},
		{"", ""},
	}
	for _, tt := range tests {
		if got := ParseOSRelease(tt.in); got != tt.want {
			t.Errorf("ParseOSRelease(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
	model, n := ParseCPUInfo("processor : 0\nModel : Raspberry Pi 4\nprocessor : 1\n")
	if model != "Raspberry Pi 4" || n != 2 {
		t.Errorf("ParseCPUInfo = %q %d", model, n)
	}
}

func TestCollectRegistersHost(t *testing.T) {
	var m results.Manifest
	Collect(Config{Root: "testdata/host"}, &m)
	if m.Host.Hostname != "fixture-node" {
		t.Errorf("registered host collector did not run: %+v", m.Host)
	}
}
