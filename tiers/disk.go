package tiers

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/kvtier/kvtier/diskio"
	"github.com/kvtier/kvtier/kv"
	"github.com/kvtier/kvtier/option"
	"github.com/kvtier/kvtier/peer"
	"github.com/kvtier/kvtier/results"
	"github.com/kvtier/kvtier/system"
	"github.com/kvtier/kvtier/tiers/tierspec"
	"github.com/kvtier/kvtier/units"
)

func init() {
	Register(Spec{
		Desc:   tierspec.Disk,
		Timing: Blocking,
		New: func(env Env) Tier {
			o := OptionsOf(env, NewDiskOptions)
			v := o.variant()
			if env.stores() && v.sync == "" {
				v.sync = SyncNone
			}
			return &diskTier{env: env, opts: *o, v: v, newReader: diskio.NewReader, write: diskio.Write}
		},
		NewOptions: func() Options { return NewDiskOptions() },
		Columns: []results.Column{
			results.Int("iodepth", "count", "disk: reads (or writes) in flight: io_uring's depth or cuFile's readers; 1 for pread"),
			results.Bool("fixed_bufs", "disk, io_uring: whether the buffers were registered (fixed)"),
			results.Text("disk", "disk: the block device under the tier's file"),
			results.Text("disk_fs", "disk: the file system of the tier's file"),
			results.Text("gds_mode", "disk, cufile: native (GPUDirect Storage: the nvidia-fs module loaded and in use by cuFile) or compatibility (cuFile's POSIX fallback through host memory)"),
			results.Text("gds_reason", "disk, cufile: why gds_mode: the nvidia-fs version cuFile's driver properties report, and whether the module is loaded"),
			results.Text("sync", "disk stores: what a sample waits for: none (the writes complete) or fdatasync (they are durable)"),
		},
		Prepares: "the disk file to be written and its pages dropped",
	})
}

// DiskOptions are the disk tier's own options.
type DiskOptions struct {
	// Dir is where the tier's file goes; "" puts it in the results
	// directory (Env.Scratch).
	Dir     string
	IO      string // comma-separated: uring, pread, cufile
	IODepth int    // reads in flight (io_uring) or cuFile readers
	// Cached adds reads through the page cache (no O_DIRECT, pages kept):
	// DRAM measured on purpose, labelled pagecache.
	Cached bool
	Max    string // the most bytes the file may take, e.g. 4GiB; "" no limit but free space
	// Sync is what a store waits for, comma-separated: none (the writes
	// complete) and fdatasync (they are durable).
	Sync string

	one *diskVariant // set on the options of one variant
}

// A diskVariant is one configuration of the disk tier.
type diskVariant struct {
	io     string
	cached bool
	sync   string // a store's: SyncNone or SyncData; "" for a load
}

func (v diskVariant) name() string {
	n := v.io
	if v.sync != "" && v.io == diskio.Pread {
		n = diskio.Pwrite
	}
	if v.cached {
		n += "-cached"
	}
	if v.sync == SyncData {
		n += "+" + SyncData
	}
	return n
}

// What a disk store waits for (--sync).
const (
	SyncNone = "none"      // until the writes complete
	SyncData = "fdatasync" // until they are durable
)

// NewDiskOptions returns the disk tier's defaults: its file in the
// results directory, io_uring, pread and cuFile at queue depth 32.
func NewDiskOptions() *DiskOptions {
	return &DiskOptions{IO: "uring,pread,cufile", IODepth: 32, Sync: SyncNone + "," + SyncData}
}

// Fields declares disk-dir, io, iodepth, cached and disk-max.
func (o *DiskOptions) Fields() []option.Field {
	return []option.Field{
		{Name: "disk-dir", Ptr: &o.Dir, Usage: "directory on a disk for the disk tier's file (default: the results directory); tmpfs is refused"},
		{Name: "io", Ptr: &o.IO, Usage: "disk tier reads: uring (io_uring, registered buffers), pread (one per chunk), cufile (GPUDirect Storage into GPU memory)"},
		{Name: "iodepth", Ptr: &o.IODepth, Usage: "disk tier: reads in flight (io_uring) or cuFile readers"},
		{Name: "cached", Ptr: &o.Cached, Usage: "disk tier: also read through the page cache (DRAM, on purpose; rows say pagecache)"},
		{Name: "disk-max", Ptr: &o.Max, Usage: "disk tier: the most its file may take, e.g. 4GiB; larger prefixes are skipped (default: 90% of free space)"},
		{Name: "sync", Ptr: &o.Sync, Usage: "disk tier stores: what a sample waits for, none (the writes complete) and/or fdatasync (they are durable)"},
	}
}

// ioModes are the values of --io.
var ioModes = []string{diskio.Uring, diskio.Pread, diskio.CUFile}

func (o *DiskOptions) modes() []string { return splitList(o.IO) }

// syncs are the values of --sync; none when it is empty.
func (o *DiskOptions) syncs() []string {
	if s := splitList(o.Sync); len(s) > 0 {
		return s
	}
	return []string{SyncNone}
}

// splitList splits a comma-separated list, trimmed, each value once.
func splitList(s string) []string {
	var ms []string
	for m := range strings.SplitSeq(s, ",") {
		if m = strings.TrimSpace(m); m != "" && !slices.Contains(ms, m) {
			ms = append(ms, m)
		}
	}
	return ms
}

// Validate reports every problem at once.
func (o *DiskOptions) Validate() error {
	var errs []error
	if len(o.modes()) == 0 {
		errs = append(errs, option.Errorf("io", "no I/O mode given (want uring, pread or cufile)"))
	}
	for _, m := range o.modes() {
		if !slices.Contains(ioModes, m) {
			errs = append(errs, option.Errorf("io", "unknown I/O mode %q (want uring, pread or cufile)", m))
		}
	}
	for _, m := range o.syncs() {
		if m != SyncNone && m != SyncData {
			errs = append(errs, option.Errorf("sync", "unknown value %q (want none or fdatasync)", m))
		}
	}
	errs = append(errs, option.Range("iodepth", o.IODepth, 1, 4096))
	if _, err := o.maxBytes(); err != nil {
		errs = append(errs, option.Wrap("disk-max", err))
	}
	if o.Dir != "" {
		if fi, err := os.Stat(o.Dir); err != nil {
			errs = append(errs, option.Wrap("disk-dir", err))
		} else if !fi.IsDir() {
			errs = append(errs, option.Errorf("disk-dir", "%s is not a directory", o.Dir))
		}
	}
	return errors.Join(errs...)
}

func (o *DiskOptions) maxBytes() (int64, error) {
	if strings.TrimSpace(o.Max) == "" {
		return 0, nil
	}
	n, err := units.ParseBytes(o.Max)
	if err == nil && n <= 0 {
		err = fmt.Errorf("want a positive size, got %q", o.Max)
	}
	return n, err
}

// Settings records the disk tier's options.
func (o *DiskOptions) Settings() map[string]string {
	return map[string]string{"disk_dir": o.Dir, "io": o.IO, "iodepth": strconv.Itoa(o.IODepth),
		"cached": strconv.FormatBool(o.Cached), "disk_max": o.Max, "sync": o.Sync}
}

// Variants are the configurations of a load: VariantsFor(Load).
func (o *DiskOptions) Variants() []Variant { return o.VariantsFor(Load) }

// VariantsFor are one configuration per I/O mode, and with Cached one
// more through the page cache for each of io_uring and pread; a store
// has each once per --sync value.
func (o *DiskOptions) VariantsFor(d Direction) []Variant {
	var vs []Variant
	syncs := []string{""}
	if d == Store {
		syncs = o.syncs()
	}
	add := func(v diskVariant) {
		for _, s := range syncs {
			c, one := *o, v
			one.sync = s
			c.one = &one
			vs = append(vs, Variant{Name: one.name(), Options: &c})
		}
	}
	for _, m := range o.modes() {
		add(diskVariant{io: m})
	}
	if o.Cached {
		for _, m := range o.modes() {
			if m != diskio.CUFile {
				add(diskVariant{io: m, cached: true})
			}
		}
	}
	return vs
}

// variant is the configuration these options stand for: their own when
// they are a variant's, else the first they ask for.
func (o *DiskOptions) variant() diskVariant {
	if o.one != nil {
		return *o.one
	}
	if ms := o.modes(); len(ms) > 0 {
		return diskVariant{io: ms[0]}
	}
	return diskVariant{io: diskio.Uring}
}

// A GDSBackend is a backend whose device memory GPUDirect Storage can
// read files into (the cuda backend): where libcufile is and how cuFile's
// calls make the backend's context current.
type GDSBackend interface {
	GDS() (lib string, ctx diskio.DeviceContext)
}

// diskShare is the share of a filesystem's free space the tier's file
// may take.
const diskShare = 0.9

// A diskTier keeps the prefix's blocks at random slots of a file laid
// out like the other tiers' pools, a quarter larger than the working
// set, written once with the pattern, and reads every chunk (or, for
// the contiguous copy mode, the same payload as block-sized sequential
// reads) into the working pool: straight into it in host memory, into a
// pinned bounce buffer then one upload to GPU memory, or by cuFile into
// GPU memory. Before each sample it checks the file and drops its pages
// from the page cache (not for the cached variant).
type diskTier struct {
	env  Env
	opts DiskOptions
	v    diskVariant
	// newReader and write are diskio's; tests stand in refusals and a
	// disk that fills.
	newReader func(mode string, depth int, dst []byte) (diskio.Reader, error)
	write     func(ctx context.Context, path string, size int64, seed uint64) error

	dir  string
	fs   diskio.FS
	disk results.Disk

	file     *diskFile
	fileSize int64
	plan     []kv.Copy // the whole working set, block by block: Src in the file, Dst in the pool
	upload   []kv.Copy // plan with Src = Dst: the bounce buffer's upload
	perBlock int

	f      *diskio.File
	reader diskio.Reader
	gds    *diskio.GDS
	dst    Buffer
	bounce Buffer
	push   func([]kv.Copy) error // upload from the bounce buffer; nil without one

	// A store's: the writes (the plan turned around: Src in the working
	// pool, Dst in the file), the writer, the download of the working
	// pool into the bounce buffer (nil without one) and a descriptor
	// through the page cache for scrubbing and reading back.
	wplan  []kv.Copy
	writer diskio.Writer
	pull   func([]kv.Copy) error
	back   *os.File
}

// lbsUnknown is the O_DIRECT alignment assumed where sysfs does not say.
const lbsUnknown = 512

// Available says why the tier cannot run here: no directory for its
// file, a directory in memory, chunks O_DIRECT cannot read, io_uring
// refused, or GPUDirect Storage without GPU memory or libcufile.
func (t *diskTier) Available() string {
	if r := t.placeReason(); r != "" {
		return r
	}
	if !t.v.cached {
		lbs := t.disk.LogicalBlock
		if lbs <= 0 {
			lbs = lbsUnknown
		}
		if cb := t.env.Geometry.ChunkBytes(t.env.Layout); cb%int64(lbs) != 0 {
			return fmt.Sprintf("chunks of %d bytes are not a multiple of the disk's %d-byte logical block: O_DIRECT cannot read them (--cached reads through the page cache)", cb, lbs)
		}
	}
	switch t.v.io {
	case diskio.Uring:
		r, err := t.newReader(diskio.Uring, 1, nil)
		if err != nil {
			return t.uringReason(err)
		}
		r.Close()
	case diskio.CUFile:
		return t.gdsReason()
	}
	return ""
}

// placeReason finds the directory, its filesystem and its disk, and says
// why the file cannot go there.
func (t *diskTier) placeReason() string {
	t.dir = t.opts.Dir
	if t.dir == "" {
		t.dir = t.env.Scratch
	}
	if t.dir == "" {
		return "no directory for the disk tier's file: give --disk-dir"
	}
	fs, err := diskio.StatFS(t.dir)
	if err != nil {
		return err.Error()
	}
	t.fs = fs
	if r := fs.MemoryReason(t.dir); r != "" {
		return r
	}
	t.disk = results.Disk{Name: "unknown"}
	var st unix.Stat_t
	if unix.Stat(t.dir, &st) == nil {
		if d, err := system.DiskOf(root(t.env), unix.Major(st.Dev), unix.Minor(st.Dev)); err == nil {
			t.disk = d
		}
	}
	return ""
}

// uringReason is the skipped row's reason for an io_uring that would not
// set up, with the sysctl that turns it off where it is set.
func (t *diskTier) uringReason(err error) string {
	why := err.Error()
	if !errors.Is(err, diskio.ErrRefused) {
		return "io_uring: " + why
	}
	b, rerr := os.ReadFile(filepath.Join(root(t.env), "proc/sys/kernel/io_uring_disabled"))
	if v := strings.TrimSpace(string(b)); rerr == nil && v != "0" {
		why += "; kernel.io_uring_disabled = " + v
	} else {
		why += " (kernel without io_uring, or a seccomp filter: containers often block it)"
	}
	return why + "; --io pread reads without it"
}

// gdsMode says how cuFile moves the tier's bytes and why: from the
// nvidia-fs module and, once the driver is open, cuFile's own driver
// properties.
func (t *diskTier) gdsMode() (mode, reason string) {
	module := system.GDSMode(root(t.env)) == "native"
	if t.gds == nil {
		return "compatibility", "cuFile driver not open: its properties unread"
	}
	return t.gds.Mode(module)
}

// gdsReason says why GPUDirect Storage cannot run here.
func (t *diskTier) gdsReason() string {
	gb, ok := t.env.Backend.(GDSBackend)
	if !ok || !t.env.Backend.Caps().DeviceMemory {
		return fmt.Sprintf("GPUDirect Storage (--io cufile) moves data between files and GPU memory: the %s backend has none (run with --backend cuda)", t.env.Backend.Name())
	}
	lib, ctx := gb.GDS()
	if err := diskio.ProbeGDS(lib, ctx); err != nil {
		return "GPUDirect Storage unavailable: " + err.Error()
	}
	return ""
}

// fileBytes is the size of the file for maxBlocks blocks.
func (t *diskTier) fileBytes(maxBlocks int) int64 {
	return int64(kv.PoolSlots(maxBlocks)) * t.env.Geometry.BlockBytes()
}

// LimitReason says why the file for maxBlocks blocks is not written:
// larger than --disk-max.
func (t *diskTier) LimitReason(maxBlocks int) string {
	size := t.fileBytes(maxBlocks)
	if max, _ := t.opts.maxBytes(); max > 0 && size > max {
		return fmt.Sprintf("the disk tier's file for %d blocks takes %s, more than --disk-max %s", maxBlocks, units.FormatBytes(size), units.FormatBytes(max))
	}
	return ""
}

// FitReason says why the file for maxBlocks blocks cannot be written:
// larger than --disk-max, or than the free space allows.
func (t *diskTier) FitReason(maxBlocks int) string {
	if r := t.LimitReason(maxBlocks); r != "" {
		return r
	}
	size := t.fileBytes(maxBlocks)
	need := size - t.written()
	if need <= 0 || t.dir == "" {
		return ""
	}
	fs, err := diskio.StatFS(t.dir)
	if err != nil {
		return err.Error()
	}
	if float64(need) > diskShare*float64(fs.Free) {
		return fmt.Sprintf("the disk tier's file needs %s more on %s (%s), %s free (it takes at most %.0f%%)",
			units.FormatBytes(need), t.dir, fs.Type, units.FormatBytes(fs.Free), diskShare*100)
	}
	return ""
}

// written is how much of the run's shared file already holds the
// pattern.
func (t *diskTier) written() int64 {
	if t.env.Shared == nil {
		return 0
	}
	if v, ok := t.env.Shared.Lookup(t.fileKey()); ok {
		return v.(*diskFile).written()
	}
	return 0
}

// fileKey names the run's file in Env.Shared: a load's (the pattern the
// reads verify against) and a store's (written over by every store) are
// two files.
func (t *diskTier) fileKey() string {
	if t.env.stores() {
		return fmt.Sprintf("disk-store:%s:%d", t.dir, t.env.Seed)
	}
	return fmt.Sprintf("disk:%s:%d", t.dir, t.env.Seed)
}

// SetupBytes is the host memory Setup takes: the working pool on the
// host backend, the pinned bounce buffer on a GPU (not for cuFile), and
// for the cached variant the file's pages in the page cache.
func (t *diskTier) SetupBytes(maxBlocks int) int64 {
	pool := int64(maxBlocks) * t.env.Geometry.BlockBytes()
	var n int64
	if !t.env.Backend.Caps().DeviceMemory || t.v.io != diskio.CUFile {
		n += pool
	}
	if t.v.cached {
		n += t.fileBytes(maxBlocks)
	}
	return n
}

// Setup places maxBlocks blocks over the file (writing it, once per run),
// opens it, allocates the working pool and its way in, and for the
// cached variant reads the working set once into the page cache.
func (t *diskTier) Setup(ctx context.Context, maxBlocks int) error {
	if maxBlocks <= 0 {
		return fmt.Errorf("disk: setup for %d blocks", maxBlocks)
	}
	t.Close()
	if t.dir == "" {
		if r := t.placeReason(); r != "" {
			return errors.New("disk: " + r)
		}
	}
	dstPool, err := t.setupPlan(maxBlocks)
	if err != nil {
		return err
	}
	if err := t.setupFile(ctx); err != nil {
		return err
	}
	if t.env.stores() {
		return t.setupStore(ctx, dstPool.Size())
	}
	if err := t.setupDest(dstPool.Size()); err != nil {
		return err
	}
	if t.v.cached {
		// What fetches of the largest prefix read, into the page cache.
		reads, _, err := t.reads(Prefix{Blocks: maxBlocks})
		if err == nil {
			err = t.reader.Read(ctx, t.f, reads)
		}
		if err != nil {
			return fmt.Errorf("disk: filling the page cache: %w", err)
		}
	}
	return scrubAll(t.dst)
}

// setupPlan places the blocks in the file and the working pool exactly
// as the other tiers place them in their pools.
func (t *diskTier) setupPlan(maxBlocks int) (kv.Pool, error) {
	g, l := t.env.Geometry, t.env.Layout
	src := kv.Pool{Geometry: g, Layout: l, Slots: kv.PoolSlots(maxBlocks)}
	dst := kv.Pool{Geometry: g, Layout: l, Slots: maxBlocks}
	srcSlots, err := kv.Placement(t.env.Seed, src.Slots, maxBlocks)
	if err != nil {
		return dst, err
	}
	dstSlots, err := kv.Placement(t.env.Seed^0x5bd1e995, dst.Slots, maxBlocks)
	if err != nil {
		return dst, err
	}
	if t.plan, err = kv.GatherPlan(src, srcSlots, dst, dstSlots); err != nil {
		return dst, err
	}
	t.upload = make([]kv.Copy, len(t.plan))
	for i, c := range t.plan {
		t.upload[i] = kv.Copy{Dst: c.Dst, Src: c.Dst, Bytes: c.Bytes}
	}
	t.fileSize, t.perBlock = src.Size(), g.ChunksPerBlock(l)
	return dst, nil
}

// setupFile gets the run's file (or one of the tier's own), writes what
// it lacks and opens it.
func (t *diskTier) setupFile(ctx context.Context) error {
	mk := func() (*diskFile, error) { return newDiskFile(t.dir, t.fileSeed(), t.env.Log, t.disk, t.fs) }
	if t.env.Shared != nil {
		v, err := t.env.Shared.Get(t.fileKey(), func() (io.Closer, error) { return mk() })
		if err != nil {
			return fmt.Errorf("disk: %w", err)
		}
		t.file = v.(*diskFile)
	} else {
		f, err := mk()
		if err != nil {
			return fmt.Errorf("disk: %w", err)
		}
		f.owned = true
		t.file = f
	}
	if err := t.file.ensure(ctx, t.fileSize, t.write); err != nil {
		return fmt.Errorf("disk: %w", err)
	}
	open := diskio.Open
	if t.env.stores() {
		open = diskio.OpenWrite
	}
	f, err := open(t.file.path, !t.v.cached)
	if err != nil {
		return fmt.Errorf("disk: %w", err)
	}
	t.f = f
	return nil
}

// setupDest allocates the working pool and the way reads reach it.
func (t *diskTier) setupDest(size int64) error {
	b := t.env.Backend
	var err error
	if t.dst, err = b.Alloc(Device, size); err != nil {
		return fmt.Errorf("disk: working pool: %w", err)
	}
	host, err := t.hostIO(true)
	if err != nil || t.v.io == diskio.CUFile {
		return err
	}
	if t.reader, err = t.newReader(t.v.io, t.opts.IODepth, host); err != nil {
		return fmt.Errorf("disk: %w", err)
	}
	return nil
}

// hostIO sets up how the disk's I/O reaches the working pool t.dst: by
// cuFile (t.gds; no host memory), or through the host memory it
// returns: the pool itself (in large pages where it can) or a pinned
// bounce buffer (t.bounce) whose copy into the pool (load, t.push) or
// out of it (store, t.pull) it sets.
func (t *diskTier) hostIO(load bool) ([]byte, error) {
	b := t.env.Backend
	if t.v.io == diskio.CUFile {
		lib, dc := b.(GDSBackend).GDS()
		var err error
		if t.gds, err = diskio.OpenGDS(lib, dc, t.dst.Addr(), t.dst.Size(), t.opts.IODepth); err != nil {
			return nil, fmt.Errorf("disk: %w", err)
		}
		return nil, nil
	}
	if host := t.dst.Host(); host != nil {
		if err := diskio.HugePages(host); err != nil && t.env.Log != nil {
			// The host stand-in's working pool in large pages, as a GPU's
			// memory is: requests move one DMA segment each.
			fmt.Fprintf(t.env.Log, "kvtier: disk: working pool in 4 KiB pages: %v\n", err)
		}
		return host, nil
	}
	bounce, move, err := bounceBuffer(b, t.dst, t.env.Copy, load)
	if err != nil {
		return nil, fmt.Errorf("disk: bounce buffer: %w", err)
	}
	t.bounce = bounce
	if load {
		t.push = move
	} else {
		t.pull = move
	}
	return bounce.Host(), nil
}

// reads returns the reads of a fetch of p and the ranges of the working
// pool they fill (Src = Dst): one per chunk, or for the contiguous copy
// mode the same payload as one span read in block-sized pieces.
func (t *diskTier) reads(p Prefix) (reads, filled []kv.Copy, err error) {
	if t.f == nil {
		return nil, nil, fmt.Errorf("disk: %w", errNotSetUp)
	}
	n := p.Blocks * t.perBlock
	if p.Blocks <= 0 || n > len(t.plan) {
		return nil, nil, fmt.Errorf("disk: prefix of %d blocks, set up for %d", p.Blocks, len(t.plan)/max(t.perBlock, 1))
	}
	if t.env.Copy != Contiguous {
		return t.plan[:n], t.upload[:n], nil
	}
	span, err := kv.ContiguousSpan(t.plan[:n], t.fileSize, t.dst.Size())
	if err != nil {
		return nil, nil, err
	}
	piece := t.env.Geometry.BlockBytes()
	for off := int64(0); off < span.Bytes; off += piece {
		reads = append(reads, kv.Copy{Src: span.Src + off, Dst: span.Dst + off, Bytes: min(piece, span.Bytes-off)})
	}
	return reads, []kv.Copy{{Dst: span.Dst, Src: span.Dst, Bytes: span.Bytes}}, nil
}

// Prepare checks the file is still whole and, unless this is the cached
// variant, writes back and drops its pages so the sample reads the disk.
func (t *diskTier) Prepare(p Prefix) error {
	if t.f == nil {
		return fmt.Errorf("disk: %w", errNotSetUp)
	}
	if err := t.f.Check(t.fileSize); err != nil {
		return fmt.Errorf("disk: %w", err)
	}
	if t.v.cached && !t.env.stores() {
		return nil
	}
	// A store starts with no dirty page of an earlier one left to write.
	return t.f.DropCache()
}

// Fetch reads the first p.Blocks blocks into the working pool; on the
// bounce path it returns once they are uploaded to GPU memory.
func (t *diskTier) Fetch(ctx context.Context, p Prefix) error {
	if t.env.stores() {
		return t.store(ctx, p)
	}
	reads, filled, err := t.reads(p)
	if err != nil {
		return err
	}
	if t.gds != nil {
		return t.gds.Read(ctx, t.f, reads)
	}
	if err := t.reader.Read(ctx, t.f, reads); err != nil {
		return err
	}
	if t.push != nil {
		if err := t.push(filled); err != nil {
			return fmt.Errorf("disk: bounce to device: %w", err)
		}
	}
	return nil
}

// Scrub overwrites what a fetch of p fills, in the working pool and in
// the bounce buffer.
func (t *diskTier) Scrub(p Prefix) error {
	if t.env.stores() {
		return t.scrubStore(p)
	}
	_, filled, err := t.reads(p)
	if err != nil {
		return err
	}
	for _, b := range []Buffer{t.dst, t.bounce} {
		if b != nil {
			if err := ScrubRanges(b, filled); err != nil {
				return fmt.Errorf("disk: %w", err)
			}
		}
	}
	return nil
}

// Verify checks the working pool against the pattern at each chunk's
// file offset (the span's, for the contiguous copy mode).
func (t *diskTier) Verify(p Prefix) error {
	reads, _, err := t.reads(p)
	if err != nil {
		return err
	}
	if t.env.stores() {
		return t.verifyStore(reads)
	}
	per := t.perBlock
	if t.env.Copy == Contiguous {
		per = 1
	}
	if i, err := CheckRanges(t.dst, reads, t.env.Seed); err != nil {
		return fmt.Errorf("disk: block %d chunk %d: %w", i/per, i%per, err)
	}
	return nil
}

// Attrs describes the reads for the row: the I/O mode as its transport,
// where the bytes came from and went, the queue depth and the disk.
func (t *diskTier) Attrs() map[string]string {
	a := map[string]string{
		"transport": t.v.io,
		"src_mem":   "disk",
		"dst_mem":   string(deviceMem(t.env.Backend)),
		"device":    t.env.Backend.Device(),
		"iodepth":   strconv.Itoa(t.opts.IODepth),
		"disk":      t.disk.Name,
		"disk_fs":   t.fs.Type,
	}
	// The path: O_DIRECT or the page cache, then how the bytes reach
	// GPU memory (a pinned bounce buffer) or, for cuFile, GPUDirect.
	path := "o_direct"
	switch {
	case t.v.cached:
		a["src_mem"], path = "pagecache", "pagecache"
	case t.fs.Buffered != "":
		// O_DIRECT asked, buffered I/O done: the rows say so.
		path, a["disk_fs"] = "buffered", t.fs.Type+" (data=journal: O_DIRECT is buffered)"
	}
	switch {
	case t.v.io == diskio.CUFile:
		path = peer.DestGPUDirect
		a["gds_mode"], a["gds_reason"] = t.gdsMode()
	case t.env.Backend.Caps().DeviceMemory:
		path += "+" + peer.DestBounce
	}
	a["path"] = path
	switch {
	case t.reader != nil:
		a["iodepth"] = strconv.Itoa(t.reader.Depth())
		if t.v.io == diskio.Uring {
			a["fixed_bufs"] = strconv.FormatBool(t.reader.Fixed())
		}
	case t.v.io == diskio.Pread:
		a["iodepth"] = "1"
	}
	if t.env.stores() {
		t.storeAttrs(a)
	}
	return a
}

// Work is 0: the tier moves bytes.
func (t *diskTier) Work(p Prefix) float64 { return 0 }

// Close closes the file and the readers and frees the buffers; a file of
// the tier's own (no run to share it with) is removed.
func (t *diskTier) Close() error {
	var errs []error
	closeOnce(&errs, &t.reader)
	closeOnce(&errs, &t.writer)
	closeOnce(&errs, &t.back)
	t.pull = nil
	closeOnce(&errs, &t.gds)
	closeOnce(&errs, &t.f)
	closeOnce(&errs, &t.dst, &t.bounce)
	t.push = nil
	if t.file != nil && t.file.owned {
		errs = append(errs, t.file.Close())
	}
	t.file = nil
	return errors.Join(errs...)
}

// A diskFile is the tier's data file: the pattern of seed from offset 0
// to size. A run shares one among its configurations (Env.Shared) and
// removes it when the run ends.
type diskFile struct {
	mu    sync.Mutex
	path  string
	seed  uint64
	size  int64 // bytes that hold the pattern
	owned bool  // the tier's own, removed when the tier closes
	about string
	log   io.Writer
}

// newDiskFile creates an empty data file in dir.
func newDiskFile(dir string, seed uint64, log io.Writer, disk results.Disk, fs diskio.FS) (*diskFile, error) {
	f, err := os.CreateTemp(dir, "kvtier-disk-*.kv")
	if err != nil {
		return nil, err
	}
	f.Close()
	return &diskFile{path: f.Name(), seed: seed, log: log, about: system.DiskText(disk) + ", " + fs.Type}, nil
}

func (d *diskFile) written() int64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.size
}

// ensure writes the pattern up to size, if the file does not hold it yet.
func (d *diskFile) ensure(ctx context.Context, size int64, write func(context.Context, string, int64, uint64) error) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.size >= size {
		return nil
	}
	if d.log != nil {
		fmt.Fprintf(d.log, "kvtier: disk: writing %s to %s on %s\n", units.FormatBytes(size), d.path, d.about)
	}
	if err := write(ctx, d.path, size, d.seed); err != nil {
		return err
	}
	d.size = size
	return nil
}

// Close removes the file.
func (d *diskFile) Close() error {
	if err := os.Remove(d.path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}
