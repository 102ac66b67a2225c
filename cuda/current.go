package cuda

import "unsafe"

// Current returns what another native library's calls need to make c
// current on whichever thread they run (cuFile's, for GPUDirect
// Storage): the loaded cuCtxSetCurrent and the CUcontext.
func (c *Context) Current() (setCurrent unsafe.Pointer, ctx uintptr) {
	return c.d.l.SetCtxFunc(), uintptr(unsafe.Pointer(c.ctx))
}
