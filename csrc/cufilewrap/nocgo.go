//go:build !cgo

package cufilewrap

// Without cgo the package is only this file: it imports shim, whose own
// nocgo.go ends the build with the message that kvtier needs cgo.
import _ "github.com/kvtier/kvtier/csrc/shim"
