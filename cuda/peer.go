package cuda

import "fmt"

// CanAccessPeer reports whether device dev can address device peer's
// memory directly (cuDeviceCanAccessPeer: NVLink or PCIe P2P). False
// means copies between them are staged through host memory.
func (d *Driver) CanAccessPeer(dev, peer int) (bool, error) {
	can, st := d.l.CanAccessPeer(dev, peer)
	if err := d.err(st); err != nil {
		return false, fmt.Errorf("device %d to %d: %w", dev, peer, err)
	}
	return can, nil
}

// EnablePeerAccess lets c address peer's memory (cuCtxEnablePeerAccess);
// access already enabled is not an error.
func (c *Context) EnablePeerAccess(peer *Context) error {
	if err := c.d.err(c.d.l.EnablePeer(c.ctx, peer.ctx)); err != nil {
		return fmt.Errorf("device %d to %d: %w", c.ordinal, peer.ordinal, err)
	}
	return nil
}

// CopyPeer enqueues p's copies on s, one cuMemcpyPeerAsync each, from
// device memory of src's device to device memory of dst's device (the
// plan holds device pointers). It returns the number of copies issued.
func (s *Stream) CopyPeer(dst, src *Context, p *Plan) (int, error) {
	if err := p.p.Err(); err != nil {
		return 0, err
	}
	if p.Len() == 0 {
		return 0, nil
	}
	done, st := s.c.d.l.CopyPeer(s.c.ctx, s.h, dst.ctx, src.ctx, &p.p)
	if err := s.c.d.err(st); err != nil {
		return done, fmt.Errorf("peer copy %d of %d (device %d to %d): %w", done, p.Len(), src.ordinal, dst.ordinal, err)
	}
	return done, nil
}
