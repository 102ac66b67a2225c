package cuda

/*
#include "cudawrap.h"

static void *kv_cuda_set_current_fn(kv_cuda *L) { return (void *)L->cuCtxSetCurrent; }
*/
import "C"

import "unsafe"

// Current returns what another native library's calls need to make c
// current on whichever thread they run (cuFile's, for GPUDirect
// Storage): the loaded cuCtxSetCurrent and the CUcontext.
func (c *Context) Current() (setCurrent unsafe.Pointer, ctx uintptr) {
	return C.kv_cuda_set_current_fn(c.d.l), uintptr(unsafe.Pointer(c.ctx))
}
