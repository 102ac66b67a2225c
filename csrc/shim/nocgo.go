//go:build !cgo

package shim

// kvtier loads libcuda, libcublas, libibverbs and the others through C
// shims, so it is built with cgo: this file, built only without it, stops
// the build with one line that says so (the packages that call the shims
// all import this one and are not compiled after it fails), rather than
// a build-constraint error for each of them.
var _ int = "kvtier needs cgo: CGO_ENABLED=1 and gcc"
