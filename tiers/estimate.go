package tiers

import (
	"github.com/kvtier/kvtier/diskio"
	"github.com/kvtier/kvtier/kv"
)

// An Estimate is roughly how long a tier's work takes, in seconds: what a
// run weighs its configurations by for the time it says is left (the
// ETA). Nothing in it becomes a row, and only the ratios between
// configurations matter: the ETA scales them by the time the run has
// taken so far.
type Estimate struct {
	Fetch float64 // one Fetch
	// Check is the scrub and the verification of one Fetch's bytes in
	// host memory, run around the verified reps.
	Check float64
	Setup float64 // the Setup of each configuration
	// Once is set-up that every configuration of the tier in a run
	// shares (the disk tier's file, written once): counted once.
	Once float64
}

// An Estimator is a tier that can estimate its work; every tier here is.
type Estimator interface {
	// Estimate is the estimate of a Fetch of blocks blocks after a
	// Setup for maxBlocks.
	Estimate(blocks, maxBlocks int) Estimate
}

// A Rate is a rough cost of moving KV bytes: seconds per copy issued and
// bytes per second. The figures below are orders of magnitude (a GPU
// node's, and the 2-core CI machine's for the host stand-in), for the ETA
// only; the stand-in's are set so that the ETAs of five recorded sweeps
// (two machines, quiet and loaded: harness/sweep's eta_test.go) stay
// within a factor of 2 of the time each had left.
type Rate struct {
	PerCopy, BytesPerSec float64
}

// Rough rates of set-up: filling host memory with the pattern, starting
// an embedded peer, writing the disk tier's file.
const (
	fillBytesPerSec = 4e9
	// setupBytesPerSec is the rate of filling pools just allocated: each
	// page faulted in and zeroed before the pattern is written, several
	// times slower than writing memory already there (about 0.3 GB/s on
	// the project's 2-core VM for make bench's 64k-token pools).
	setupBytesPerSec = 0.3e9
	peerStartSeconds = 1
	fileBytesPerSec  = 0.3e9
)

// seconds is the time to move blocks blocks of env's geometry in env's
// layout and copy mode at rate r: one copy per chunk, or one in all when
// contiguous (a batch is one call, its copies still paced by the engine).
func (r Rate) seconds(env Env, blocks int) float64 {
	copies := blocks * env.Geometry.ChunksPerBlock(env.Layout)
	if env.Copy == Contiguous {
		copies = 1
	}
	return float64(copies)*r.PerCopy + float64(blocks)*float64(env.Geometry.BlockBytes())/r.BytesPerSec
}

// rateOn picks a tier's rate on env's backend: a device's, or the host
// stand-in's.
func rateOn(env Env, device, standIn Rate) Rate {
	if env.Backend.Caps().DeviceMemory {
		return device
	}
	return standIn
}

// fill is the time of writing (or comparing) bytes bytes of memory
// already in place.
func fill(bytes int64) float64 { return float64(bytes) / fillBytesPerSec }

// setup is the set-up time of pools of bytes bytes, allocated fresh.
func setup(bytes int64) float64 { return float64(bytes) / setupBytesPerSec }

// moved is the estimate of a Fetch of blocks blocks at rate r in env,
// with its check: a scrub and a comparison of its bytes.
func moved(env Env, r Rate, blocks int) Estimate {
	return Estimate{Fetch: r.seconds(env, blocks), Check: 2 * fill(int64(blocks)*env.Geometry.BlockBytes())}
}

// Estimate: a gather at memory speed (hbm), or across PCIe (host); on
// the stand-in a memcpy.
func (t *gatherTier) Estimate(blocks, maxBlocks int) Estimate {
	dev := Rate{2e-6, 25e9}
	if t.srcKind == Device {
		dev = Rate{2e-6, 1.5e12}
	}
	r := rateOn(t.env, dev, Rate{0.1e-6, 10e9})
	e := moved(t.env, r, blocks)
	e.Setup = setup(int64(kv.PoolSlots(maxBlocks)) * t.env.Geometry.BlockBytes())
	return e
}

// Estimate: RDMA on a GPU node, TCP over loopback on the stand-in; the
// set-up starts an embedded peer and fills its pool. An embedded peer
// fills its pool on a goroutine of its own while the client fills its
// buffers, about as many bytes, so the two overlap: make bench's
// 64k-token set-up took 24 to 29 s on the 2-core machine, where the sum
// of the bytes at the fresh-pool rate gives 44.
func (t *remoteTier) Estimate(blocks, maxBlocks int) Estimate {
	r := rateOn(t.env, Rate{2e-6, 10e9}, Rate{5e-6, 3e9})
	e := moved(t.env, r, blocks)
	pools := setup(t.SetupBytes(maxBlocks))
	if t.opts.Peer == "" {
		pools /= 2
	}
	e.Setup = peerStartSeconds + pools
	return e
}

// Estimate: a read per chunk, queued (io_uring, cuFile) or one at a time
// (pread); the file is written once per run.
func (t *diskTier) Estimate(blocks, maxBlocks int) Estimate {
	r := Rate{9e-6, 1.8e9}
	if t.v.io == diskio.Pread {
		r = Rate{65e-6, 1.4e9}
	}
	e := moved(t.env, r, blocks)
	e.Setup, e.Once = setup(t.SetupBytes(maxBlocks)), float64(t.fileBytes(maxBlocks))/fileBytesPerSec
	return e
}

// Estimate: the prefill's FLOPs at a GPU's rate, or the CPU's.
func (t *recomputeTier) Estimate(blocks, maxBlocks int) Estimate {
	rate := 5e9
	if t.env.Backend.Caps().DeviceMemory {
		rate = 1e14
	}
	return Estimate{Fetch: t.Work(Prefix{Tokens: blocks * t.env.Geometry.BlockTokens, Blocks: blocks}) / rate}
}
