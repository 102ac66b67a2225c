package tierflag

import (
	"errors"
	"os/exec"
	"sync"

	"github.com/kvtier/kvtier/cli"
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

// LibraryGroup is the native libraries' variables: no flag, read by every
// command that opens a backend or writes a manifest (the machine's facts
// load NVML and the drivers), and by the commands that list it in their
// Env (info, serve).
var LibraryGroup = cli.NewGroup(cli.FlagGroup{
	Name: "libraries", Heading: "Native libraries", Order: 80,
	ReadBy: []string{cli.OutputGroup.Name, BackendGroup.Name},
	Env: []cli.EnvVar{
		{Name: EnvLibCUDA, Meaning: "libcuda.so.1 to load instead of the usual sonames"},
		{Name: EnvLibCUBLAS, Meaning: "libcublas to load instead of the usual sonames and pip's wheels"},
		{Name: EnvLibIBVerbs, Meaning: "libibverbs.so.1 to load instead of the usual sonames"},
		{Name: EnvLibCUFile, Meaning: "libcufile.so to load instead of the usual sonames"},
		{Name: EnvLibNVML, Meaning: "libnvidia-ml.so.1 to load instead of the usual sonames"},
	},
})

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
