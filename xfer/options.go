package xfer

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/kvtier/kvtier/harness"
	"github.com/kvtier/kvtier/kv"
	"github.com/kvtier/kvtier/option"
	"github.com/kvtier/kvtier/peer"
	"github.com/kvtier/kvtier/tiers"
	"github.com/kvtier/kvtier/units"
)

// Layouts of a transfer: the two pool layouts plus one message.
const (
	Layerwise  = "layerwise"  // 16 KiB chunks (one per layer, K and V) at scattered offsets
	Blockwise  = "blockwise"  // one chunk per block (1.5 MiB for Qwen3-Coder-30B-A3B)
	Contiguous = "contiguous" // one message
)

// Destinations of a transfer (Options.DstMem, the dst_mem column).
const (
	DstHost = "host"
	DstGPU  = "gpu"
)

// PathPeerCopy is the path of GPU-to-GPU peer copy rows.
const PathPeerCopy = "peercopy"

// MaxSize bounds one transfer size: 1 TiB.
const MaxSize = 1 << 40

// DefaultSizes are 16 MiB to 16 GiB, doubling.
func DefaultSizes() []int64 {
	var s []int64
	for n := int64(16 << 20); n <= 16<<30; n *= 2 {
		s = append(s, n)
	}
	return s
}

// Options are the resolved options of an MB2 transfer sweep.
type Options struct {
	// Peers are HOST:PORT of kvtier serve peers, measured in turn into
	// one transfer.csv; empty starts an embedded loopback peer.
	Peers    []string
	Sizes    []int64
	Policy   harness.Policy
	Layouts  []string
	Geometry kv.Geometry // sets the chunk sizes of the pool layouts
	// ClientSettings are how the peers are reached (transport,
	// connections or QPs, RDMA device, GID, QoS, idle timeout, token),
	// the remote tier's type.
	peer.ClientSettings
	// Path labels the rows intra or inter; "" decides per peer.
	Path string
	// LineGbps is the link rate in Gb/s for line_frac; 0 takes the NIC's
	// rate on verbs and leaves it unknown on TCP.
	LineGbps float64
	// DeviceReason says why the RDMA device was picked (device_reason).
	DeviceReason string
	Seed         uint64
	// PoolBytes sizes the embedded peer's pool; 0 fits the largest size
	// into free memory.
	PoolBytes int64
	// DstMem is where reads land: host, or gpu (device memory of the
	// destination backend).
	DstMem string
	// PeerCopy, when set, is {SRC, DST}: GPU ordinals between which each
	// size and layout is also copied (path peercopy).
	PeerCopy []int
	Root     string // root of procfs and sysfs reads
	// Directions are load (reads: pull from the peer, the default) and
	// store (writes: push into the peer's pool, which kvtier serve
	// accepts with --writable).
	Directions []tiers.Direction
}

// DefaultOptions are the options of a plain kvtier transfer.
func DefaultOptions() Options {
	g, _ := kv.Resolve("", "", kv.DefaultBlockTokens)
	return Options{
		Sizes: DefaultSizes(), Policy: harness.Policy{Warmup: harness.DefaultWarmup, Reps: 5},
		Layouts:  []string{Layerwise, Blockwise, Contiguous},
		Geometry: g, ClientSettings: peer.DefaultClientSettings(peer.DefaultConns), Seed: 1, DstMem: DstHost, Root: "/",
		Directions: []tiers.Direction{tiers.Load},
	}
}

// Validate reports every problem at once as option.Errors.
func (o *Options) Validate() error {
	return errors.Join(append(o.workErrors(), o.peerErrors()...)...)
}

// workErrors are the problems with what is moved: sizes, layouts,
// directions, the reps policy and the model's geometry.
func (o *Options) workErrors() []error {
	var errs []error
	bad := func(field, format string, args ...any) { errs = append(errs, option.Errorf(field, format, args...)) }
	if len(o.Sizes) == 0 {
		bad("sizes", "no sizes")
	}
	for _, s := range o.Sizes {
		if s <= 0 || s > MaxSize {
			bad("sizes", "want 1 byte to 1 TiB, got %d", s)
		}
	}
	errs = append(errs, o.Policy.Validate(false))
	if len(o.Layouts) == 0 {
		bad("layout", "no layouts")
	}
	for _, l := range o.Layouts {
		if l != Layerwise && l != Blockwise && l != Contiguous {
			bad("layout", "unknown layout %q (known: layerwise, blockwise, contiguous)", l)
		}
	}
	errs = append(errs, tiers.CheckDirections(o.Directions))
	if err := o.Geometry.Validate(); err != nil {
		errs = append(errs, option.Wrap("model", err))
	}
	return errs
}

// peerErrors are the problems with the peers and the path to them:
// connections, transport, labels, RDMA settings, the embedded pool.
func (o *Options) peerErrors() []error {
	errs := o.ClientSettings.Errors()
	bad := func(field, format string, args ...any) { errs = append(errs, option.Errorf(field, format, args...)) }
	if o.Path != "" && o.Path != peer.PathIntra && o.Path != peer.PathInter {
		bad("path", "want intra or inter, got %q", o.Path)
	}
	if o.LineGbps < 0 || math.IsNaN(o.LineGbps) || math.IsInf(o.LineGbps, 0) || o.LineGbps > 1e6 {
		bad("line-rate", "want a rate in Gb/s, got %v", o.LineGbps)
	}
	if o.DstMem != DstHost && o.DstMem != DstGPU {
		bad("dst-mem", "want host or gpu, got %q", o.DstMem)
	}
	if o.PeerCopy != nil && (len(o.PeerCopy) != 2 || o.PeerCopy[0] < 0 || o.PeerCopy[1] < 0 || o.PeerCopy[0] == o.PeerCopy[1]) {
		bad("peer-copy", "want SRC,DST: two different GPU ordinals, got %v", o.PeerCopy)
	}
	if o.PoolBytes < 0 || o.PoolBytes > MaxSize {
		bad("pool", "want 0 (automatic) up to 1 TiB, got %d", o.PoolBytes)
	}
	for _, p := range o.Peers {
		if err := peer.CheckAddr(p); err != nil {
			errs = append(errs, option.Wrap("peer", err))
		}
	}
	return errs
}

// Settings renders the options for the manifest.
func (o *Options) Settings() map[string]string {
	var sizes []string
	for _, s := range o.Sizes {
		sizes = append(sizes, units.FormatBytes(s))
	}
	pc := ""
	if len(o.PeerCopy) == 2 {
		pc = fmt.Sprintf("%d,%d", o.PeerCopy[0], o.PeerCopy[1])
	}
	m := map[string]string{
		"peers": strings.Join(o.Peers, ","), "sizes": strings.Join(sizes, ","), "reps": fmt.Sprint(o.Policy.Reps),
		"warmup": fmt.Sprint(o.Policy.Warmup), "layouts": strings.Join(o.Layouts, ","), "model": o.Geometry.Model,
		"block_size": fmt.Sprint(o.Geometry.BlockTokens),
		"path":       o.Path, "line_rate_gbit": fmt.Sprint(o.LineGbps), "seed": fmt.Sprint(o.Seed), "dst_mem": o.DstMem, "peer_copy": pc,
		"directions": joinDirections(o.directions()), "rdma_device_reason": o.DeviceReason,
	}
	maps.Copy(m, o.Geometry.ShardSettings())
	o.Record(m)
	return m
}

// directions returns the directions to run, load first, each once; none
// given means load.
func (o *Options) directions() []tiers.Direction {
	return tiers.RunOrder(o.Directions)
}

// RunDirections returns the directions to run, load first, each once;
// none asked means load.
func (o *Options) RunDirections() []tiers.Direction { return o.directions() }

// Stores reports whether stores are asked: a peer served for the run
// must then accept writes.
func (o *Options) Stores() bool { return o.stores() }

// stores reports whether o measures stores.
func (o *Options) stores() bool { return slices.Contains(o.directions(), tiers.Store) }

func joinDirections(ds []tiers.Direction) string {
	var s []string
	for _, d := range ds {
		s = append(s, string(d))
	}
	return strings.Join(s, ",")
}
