package tiers

import (
	"errors"
	"fmt"
	"strings"

	"github.com/kvtier/kvtier/cuda"
	"github.com/kvtier/kvtier/kv"
)

// A PeerCopier is a backend that copies between two of its devices: the
// GPU-to-GPU path beside the NIC (cuMemcpyPeerAsync on the cuda backend).
type PeerCopier interface {
	// OpenPeerCopy prepares copies from GPU src to GPU dst; an error says
	// why they cannot run here (one GPU, a driver without peer copy).
	OpenPeerCopy(src, dst int) (PeerCopy, error)
}

// A PeerCopy copies from one GPU's memory to another's on a stream of the
// source GPU, timed with CUDA events on that stream.
type PeerCopy interface {
	// Link is "P2P" when the GPUs reach each other's memory directly,
	// else "staged through host".
	Link() string
	// GPUs names both devices, e.g. "H200 [0000:19:00.0] -> H200 [...]".
	GPUs() string
	// Alloc returns device memory on the source (side 0) or the
	// destination (side 1) GPU.
	Alloc(side int, size int64) (Buffer, error)
	// FreeMem is the free memory of side's GPU.
	FreeMem(side int) (int64, error)
	// Copy enqueues plan from src (on the source GPU) to dst (on the
	// destination GPU).
	Copy(dst, src Buffer, plan []kv.Copy) error
	// Timer times one copy with events on the source's stream.
	Timer() Timer
	Close() error
}

// OpenPeerCopy implements PeerCopier with the backend's driver.
func (b *CUDABackend) OpenPeerCopy(src, dst int) (PeerCopy, error) {
	n, err := b.drv.DeviceCount()
	if err != nil {
		return nil, err
	}
	if n < 2 || src >= n || dst >= n || src == dst {
		return nil, fmt.Errorf("peer copy needs two GPUs; the driver sees %d, asked for GPU%d and GPU%d", n, src, dst)
	}
	can, err := b.drv.CanAccessPeer(src, dst)
	if err != nil {
		return nil, err
	}
	pc := &cudaPeerCopy{link: "staged through host"}
	if err := pc.open(b.drv, src, dst); err != nil {
		pc.Close()
		return nil, err
	}
	if can && pc.ctx[0].EnablePeerAccess(pc.ctx[1]) == nil && pc.ctx[1].EnablePeerAccess(pc.ctx[0]) == nil {
		pc.link = "P2P"
	}
	var names []string
	for _, d := range []int{src, dst} {
		if info, err := b.drv.Device(d); err == nil {
			names = append(names, fmt.Sprintf("%s [%s]", info.Name, info.BusID))
		}
	}
	pc.gpus = strings.Join(names, " -> ")
	return pc, nil
}

// cudaPeerCopy holds both primary contexts and the source's stream and
// events.
type cudaPeerCopy struct {
	ctx         [2]*cuda.Context
	stream      *cuda.Stream
	start, stop *cuda.Event
	plan        cuda.Plan
	link, gpus  string
}

func (pc *cudaPeerCopy) open(drv *cuda.Driver, src, dst int) error {
	var err error
	for i, d := range []int{src, dst} {
		if pc.ctx[i], err = drv.PrimaryContext(d); err != nil {
			return err
		}
	}
	if pc.stream, err = pc.ctx[0].NewStream(); err != nil {
		return err
	}
	if pc.start, err = pc.ctx[0].NewEvent(); err != nil {
		return err
	}
	pc.stop, err = pc.ctx[0].NewEvent()
	return err
}

func (pc *cudaPeerCopy) Link() string { return pc.link }
func (pc *cudaPeerCopy) GPUs() string { return pc.gpus }

func (pc *cudaPeerCopy) Alloc(side int, size int64) (Buffer, error) {
	m, err := pc.ctx[side].AllocDevice(size)
	if err != nil {
		return nil, err
	}
	return &peerBuffer{m}, nil
}

func (pc *cudaPeerCopy) FreeMem(side int) (int64, error) {
	free, _, err := pc.ctx[side].MemInfo()
	return free, err
}

func (pc *cudaPeerCopy) Copy(dst, src Buffer, plan []kv.Copy) error {
	d, ok1 := dst.(*peerBuffer)
	s, ok2 := src.(*peerBuffer)
	if !ok1 || !ok2 {
		return errors.New("peer copy: buffers are not from this peer copy")
	}
	if err := kv.CheckPlan(plan, s.Size(), d.Size()); err != nil {
		return err
	}
	pc.plan.Reset(len(plan))
	for _, c := range plan {
		pc.plan.Add(d.m.Ptr()+uint64(c.Dst), s.m.Ptr()+uint64(c.Src), c.Bytes)
	}
	if _, err := pc.stream.CopyPeer(pc.ctx[1], pc.ctx[0], &pc.plan); err != nil {
		pc.stream.Sync()
		return err
	}
	return nil
}

func (pc *cudaPeerCopy) Timer() Timer { return &eventTimer{pc} }

func (pc *cudaPeerCopy) Close() error {
	var errs []error
	for _, ev := range []*cuda.Event{pc.start, pc.stop} {
		if ev != nil {
			errs = append(errs, ev.Destroy())
		}
	}
	if pc.stream != nil {
		errs = append(errs, pc.stream.Destroy())
	}
	pc.plan.Free()
	for _, c := range pc.ctx {
		if c != nil {
			errs = append(errs, c.Release())
		}
	}
	return errors.Join(errs...)
}

// An eventTimer records events around the copies on the source's stream.
type eventTimer struct{ pc *cudaPeerCopy }

func (t *eventTimer) Start() error { return t.pc.start.Record(t.pc.stream) }

func (t *eventTimer) Stop() (float64, error) {
	if err := t.pc.stop.Record(t.pc.stream); err != nil {
		return 0, err
	}
	return cuda.Elapsed(t.pc.start, t.pc.stop)
}

func (t *eventTimer) Kind() string { return TimingEvents }

// A peerBuffer is device memory of one side of a peer copy.
type peerBuffer struct{ m *cuda.DeviceMem }

func (p *peerBuffer) Kind() MemKind                            { return Device }
func (p *peerBuffer) Size() int64                              { return p.m.Size() }
func (p *peerBuffer) Addr() uintptr                            { return uintptr(p.m.Ptr()) }
func (p *peerBuffer) Host() []byte                             { return nil }
func (p *peerBuffer) ReadAt(b []byte, off int64) (int, error)  { return p.m.ReadAt(b, off) }
func (p *peerBuffer) WriteAt(b []byte, off int64) (int, error) { return p.m.WriteAt(b, off) }
func (p *peerBuffer) Close() error                             { return p.m.Free() }
