package main

import (
	"errors"
	"os"
	"os/exec"
	"sync"

	"github.com/kvtier/kvtier/peer"
	"github.com/kvtier/kvtier/results"
	"github.com/kvtier/kvtier/system"
)

// The environment variables that name the native libraries. They are
// read here and only here; the paths are passed down as configuration.
const (
	envLibCUDA    = "KVTIER_LIBCUDA"
	envLibCUBLAS  = "KVTIER_LIBCUBLAS"
	envLibIBVerbs = "KVTIER_LIBIBVERBS"
	envLibCUFile  = "KVTIER_LIBCUFILE"
)

// libraries names the native libraries to load, from the environment
// ("" takes the usual sonames).
func libraries() system.Libraries {
	return system.Libraries{
		CUDA:    os.Getenv(envLibCUDA),
		CUBLAS:  os.Getenv(envLibCUBLAS),
		IBVerbs: os.Getenv(envLibIBVerbs),
		CUFile:  os.Getenv(envLibCUFile),

		CUBLASDirs: pipCUBLASDirs,
	}
}

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

// sysConfig is where collectors look: root for sysfs and procfs, and the
// libraries from the environment.
func sysConfig(root string) system.Config {
	return system.Config{Root: root, Libs: libraries()}
}

// collectSystem adds this machine's facts to a run's manifest.
func collectSystem(m *results.Manifest) []error { return system.Collect(sysConfig("/"), m) }

// peerFaults returns the test-only fault switches: none in the shipped
// binary; the KVTIER_TEST_* environment variables in a binary built with
// -tags kvtier_testfaults (the soft-RoCE VM test's) and in this
// package's tests.
var peerFaults = buildFaults

// envFaults reads the test-only fault switches from the environment.
func envFaults() peer.Faults {
	return peer.Faults{
		CorruptRKey: os.Getenv(peer.EnvCorruptRKey) != "",
		SkipBounds:  os.Getenv(peer.EnvSkipBounds) != "",
		OutOfPool:   os.Getenv(peer.EnvOutOfPool) != "",
	}
}
