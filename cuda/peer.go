package cuda

/*
#include "cudawrap.h"
*/
import "C"

import "fmt"

// CanAccessPeer reports whether device dev can address device peer's
// memory directly (cuDeviceCanAccessPeer: NVLink or PCIe P2P). False
// means copies between them are staged through host memory.
func (d *Driver) CanAccessPeer(dev, peer int) (bool, error) {
	var can C.int
	var e C.kv_cuda_err
	if err := d.err(C.kv_cuda_can_access_peer(d.l, C.int(dev), C.int(peer), &can, &e), &e); err != nil {
		return false, fmt.Errorf("device %d to %d: %w", dev, peer, err)
	}
	return can != 0, nil
}

// EnablePeerAccess lets c address peer's memory (cuCtxEnablePeerAccess);
// access already enabled is not an error.
func (c *Context) EnablePeerAccess(peer *Context) error {
	var e C.kv_cuda_err
	if err := c.d.err(C.kv_cuda_enable_peer(c.d.l, c.ctx, peer.ctx, &e), &e); err != nil {
		return fmt.Errorf("device %d to %d: %w", c.ordinal, peer.ordinal, err)
	}
	return nil
}

// CopyPeer enqueues p's copies on s, one cuMemcpyPeerAsync each, from
// device memory of src's device to device memory of dst's device (the
// plan holds device pointers). It returns the number of copies issued.
func (s *Stream) CopyPeer(dst, src *Context, p *Plan) (int, error) {
	if p.err != nil {
		return 0, p.err
	}
	if p.n == 0 {
		return 0, nil
	}
	var done C.size_t
	var e C.kv_cuda_err
	rc := C.kv_cuda_copy_peer(s.c.d.l, s.c.ctx, s.s, dst.ctx, src.ctx, p.dsts, p.srcs, p.sizes, C.size_t(p.n), &done, &e)
	if err := s.c.d.err(rc, &e); err != nil {
		return int(done), fmt.Errorf("peer copy %d of %d (device %d to %d): %w", int(done), p.n, src.ordinal, dst.ordinal, err)
	}
	return int(done), nil
}
