package main

import (
	"os"

	"github.com/kvtier/kvtier/peer"
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
	}
}

// sysConfig is where collectors look: root for sysfs and procfs, and the
// libraries from the environment.
func sysConfig(root string) system.Config {
	return system.Config{Root: root, Libs: libraries()}
}

// peerFaults reads the test-only fault switches (the soft-RoCE VM test
// sets them) from the environment.
func peerFaults() peer.Faults {
	return peer.Faults{
		CorruptRKey: os.Getenv(peer.EnvCorruptRKey) != "",
		SkipBounds:  os.Getenv(peer.EnvSkipBounds) != "",
		OutOfPool:   os.Getenv(peer.EnvOutOfPool) != "",
	}
}
