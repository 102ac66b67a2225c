package cli

import (
	"errors"
	"os/exec"
	"sync"

	"github.com/kvtier/kvtier/peer"
	"github.com/kvtier/kvtier/results"
	"github.com/kvtier/kvtier/system"
)

// The environment variables that name the native libraries. They are
// read here and only here; the paths are passed down as configuration.
const (
	EnvLibCUDA    = "KVTIER_LIBCUDA"
	EnvLibCUBLAS  = "KVTIER_LIBCUBLAS"
	EnvLibIBVerbs = "KVTIER_LIBIBVERBS"
	EnvLibCUFile  = "KVTIER_LIBCUFILE"
	EnvLibNVML    = "KVTIER_LIBNVML"
)

// Libraries names the native libraries to load, from the environment
// getenv reads ("" takes the usual sonames).
func Libraries(getenv func(string) string) system.Libraries {
	return system.Libraries{
		CUDA:    getenv(EnvLibCUDA),
		CUBLAS:  getenv(EnvLibCUBLAS),
		IBVerbs: getenv(EnvLibIBVerbs),
		CUFile:  getenv(EnvLibCUFile),
		NVML:    getenv(EnvLibNVML),

		CUBLASDirs: pipCUBLASDirs,
	}
}

// Libraries names the native libraries the call's environment names.
func (c *Call) Libraries() system.Libraries { return Libraries(c.Getenv) }

// pipCUBLASDirs are the directories of pip's cuBLAS wheels in the
// site-packages of the Python on PATH (python3, else python), asked once
// and only when no libcublas soname loads.
var pipCUBLASDirs = sync.OnceValues(func() ([]string, error) {
	py, err := exec.LookPath("python3")
	if err != nil {
		if py, err = exec.LookPath("python"); err != nil {
			return nil, errors.New("no python3 or python on PATH to ask for its site-packages")
		}
	}
	sites, err := system.PythonSitePackages(py)
	if err != nil {
		return nil, err
	}
	return system.CUBLASDirs(sites), nil
})

// SysConfig is where collectors look: root for sysfs and procfs, and the
// libraries the call's environment names.
func (c *Call) SysConfig(root string) system.Config {
	return system.Config{Root: root, Libs: c.Libraries()}
}

// CollectSystem adds this machine's facts to a run's manifest.
func (c *Call) CollectSystem(m *results.Manifest) []error {
	return system.Collect(c.SysConfig("/"), m)
}

// PeerFaults returns the test-only fault switches, reading the
// environment with getenv: none in the shipped binary; the KVTIER_TEST_*
// environment variables in a binary built with -tags kvtier_testfaults
// (the soft-RoCE VM test's) and in the tests that set it to EnvFaults.
var PeerFaults = buildFaults

// EnvFaults reads the test-only fault switches from the environment.
func EnvFaults(getenv func(string) string) peer.Faults {
	return peer.Faults{
		CorruptRKey: getenv(peer.EnvCorruptRKey) != "",
		SkipBounds:  getenv(peer.EnvSkipBounds) != "",
		OutOfPool:   getenv(peer.EnvOutOfPool) != "",
	}
}
