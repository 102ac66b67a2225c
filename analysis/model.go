package analysis

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/kvtier/kvtier/results"
	"github.com/kvtier/kvtier/tiers/tierspec"
)

// A SweepKey names one configuration of the device tier sweep: every
// column that changes what a fetch does, except the prefix length.
type SweepKey struct {
	Backend, Transport, Tier, Layout, Copy, Path, Dtype string
	// Direction is "" for a load (and for rows without the direction
	// Column), results.DirectionStore for a store.
	Direction string
	// GPUs is results.AllGPUs on the aggregate rows of `sweep --gpu all` (every
	// GPU loading at once: the slowest GPU's time, the sum of the
	// bytes), "" on a row of one GPU. An aggregate is its own
	// configuration, never pooled with the rows of single GPUs.
	GPUs string
	// Sync is what a disk store's sample waits for where it is more than
	// the writes completing (fdatasync); "" otherwise. A durable store is
	// its own configuration, never pooled with the plain one.
	Sync string
}

// SweepKeyOf is the configuration a sweep row belongs to.
func SweepKeyOf(r results.Row) SweepKey {
	return SweepKey{
		Backend: r.Backend, Transport: r.Transport, Tier: r.Tier, Layout: r.Layout,
		Copy: r.Get(results.ColCopy), Path: r.Get(results.ColPath), Dtype: r.Get(results.ColComputeDtype),
		Direction: StoreOrEmpty(r), GPUs: allOrEmpty(r.Get(results.ColGPU)),
		Sync: syncOrEmpty(r.Get(ColSync)),
	}
}

// ColSync is the disk tier's sync column: none or fdatasync.
const ColSync = "sync"

// syncOrEmpty is a row's sync column as SweepKey keeps it: "" for none
// and for rows without it.
func syncOrEmpty(s string) string {
	if s == "none" {
		return ""
	}
	return s
}

// allOrEmpty is results.AllGPUs for the gpu column of an aggregate
// row, else "".
func allOrEmpty(gpu string) string {
	if gpu == results.AllGPUs {
		return results.AllGPUs
	}
	return ""
}

// StoreOrEmpty is a row's direction as SweepKey keeps it: "" for a load,
// so that keys, labels and orders of loads are what they were before
// stores were measured.
func StoreOrEmpty(r results.Row) string {
	if r.IsLoad() {
		return ""
	}
	return r.Direction()
}

// CompareSweepKeys orders configurations: tier, layout, copy mode and
// the rest of the key.
func CompareSweepKeys(a, b SweepKey) int {
	return cmp.Or(
		cmp.Compare(TierOrder(a.Tier), TierOrder(b.Tier)),
		cmp.Compare(a.Tier, b.Tier),
		cmp.Compare(a.Layout, b.Layout),
		cmp.Compare(a.Copy, b.Copy),
		cmp.Compare(a.Backend, b.Backend),
		cmp.Compare(a.Path, b.Path),
		cmp.Compare(a.Transport, b.Transport),
		cmp.Compare(a.Dtype, b.Dtype),
		cmp.Compare(a.Direction, b.Direction),
		cmp.Compare(a.GPUs, b.GPUs),
		cmp.Compare(a.Sync, b.Sync),
	)
}

// TierOrder is a tier's place in tables and figures, fastest first,
// the HTTP names beside the device names (tierspec.Order).
func TierOrder(t string) int { return tierspec.Order(t) }

// IsStandIn reports whether backend is the CPU stand-in for a GPU.
func IsStandIn(backend string) bool { return backend == "host" } // not a tier: the host backend

// StandInLabel is how every table and legend marks a host-backend row.
const StandInLabel = "host stand-in (CPU)"

// Label names the configuration for tables and legends: tier, layout and
// copy mode, then backend and transport, with the host stand-in marked.
func (k SweepKey) Label() string {
	var parts []string
	parts = append(parts, k.Tier)
	if k.Direction != "" {
		parts = append(parts, k.Direction)
	}
	var how []string
	for _, s := range []string{k.Layout, k.Copy, k.Dtype} {
		if s != "" {
			how = append(how, s)
		}
	}
	if len(how) > 0 {
		parts = append(parts, strings.Join(how, "/"))
	}
	be := k.Backend
	if IsStandIn(k.Backend) {
		be = StandInLabel
	}
	via := []string{be}
	if k.Transport != "" && k.Transport != k.Backend {
		via = append(via, k.Transport)
	}
	if p := k.Route(); p != "" {
		via = append(via, p)
	}
	if k.Sync != "" {
		via = append(via, k.Sync)
	}
	if l := k.AllLabel(); l != "" {
		via = append(via, l)
	}
	return strings.Join(parts, " ") + " (" + strings.Join(via, ", ") + ")"
}

// Short names the configuration within its tier, for a figure whose
// title names the tier: layout/copy, then backend, transport and path.
func (k SweepKey) Short() string {
	be := k.Backend
	if IsStandIn(be) {
		be = "stand-in"
	}
	via := JoinNonEmpty(", ", be, k.Transport, k.Route(), k.Sync, k.AllLabel())
	return JoinNonEmpty(" ", JoinNonEmpty("/", k.Layout, k.Copy, k.Dtype), "("+via+")")
}

// allGPUsLabel marks an aggregate configuration in labels.
const allGPUsLabel = "all GPUs at once"

// AllLabel is allGPUsLabel for an aggregate configuration, else "".
func (k SweepKey) AllLabel() string {
	if k.GPUs == "" {
		return ""
	}
	return allGPUsLabel
}

// Route is the path column as a label shows it: a stand-in's without
// the "(host stand-in)" the backend already says.
func (k SweepKey) Route() string {
	if IsStandIn(k.Backend) {
		return strings.TrimSpace(strings.TrimSuffix(k.Path, "(host stand-in)"))
	}
	return k.Path
}

// A Fit is the tier cost model t = Alpha + X/Rate fitted by weighted least
// squares (weights 1/t², i.e. relative residuals) over every ok sample of
// one configuration, where X is the payload bytes
// of a fetch tier or the FLOPs of recompute.
type Fit struct {
	Key       SweepKey
	Regressor string  // "bytes" or "flops"
	Alpha     float64 // seconds
	Rate      float64 // bytes/s or FLOP/s; +Inf when the slope is not positive
	R2        float64
	N         int
	MinL      int64 // shortest and longest prefix measured
	MaxL      int64
	X, Y      []float64 // the points the fit was made on
	// Problems say what is wrong with the fit (FitLine): a
	// negative fixed cost, which is then fitted away rather than used, a
	// slope that is not positive, a poor R².
	Problems []string

	// Geometry of the prefixes, learnt from the rows.
	BlockTokens int64   // tokens per block
	BlockBytes  float64 // payload bytes per block
	FlopsA      float64 // flops(L) = FlopsA·L + FlopsB·L² (recompute)
	FlopsB      float64
}

// Predict returns the modelled time for x bytes or FLOPs.
func (f Fit) Predict(x float64) float64 { return f.Alpha + x/f.Rate }

// Bytes returns the payload bytes of an L-token prefix: whole blocks.
func (f Fit) Bytes(L int64) float64 {
	return float64((L+f.BlockTokens-1)/f.BlockTokens) * f.BlockBytes
}

// Flops returns the modelled FLOPs of prefilling L tokens.
func (f Fit) Flops(L int64) float64 {
	l := float64(L)
	return f.FlopsA*l + f.FlopsB*l*l
}

// TimeAt returns the modelled time of the configuration at L tokens.
func (f Fit) TimeAt(L int64) float64 {
	if f.Regressor == "flops" {
		return f.Predict(f.Flops(L))
	}
	return f.Predict(f.Bytes(L))
}

// Fits fits the cost model of every sweep configuration that has at least
// two distinct regressor values; the others come back in skipped with the
// reason.
func Fits(rows []results.Row) (fits []Fit, skipped []string) {
	keys, groups := GroupBy(rows, SweepKeyOf, CompareSweepKeys)
	for _, k := range keys {
		f, err := fitGroup(k, groups[k])
		if err != nil {
			skipped = append(skipped, fmt.Sprintf("%s: %v", k.Label(), err))
			continue
		}
		fits = append(fits, f)
	}
	return fits, skipped
}

func fitGroup(k SweepKey, rows []results.Row) (Fit, error) {
	f := Fit{Key: k, Regressor: "bytes", MinL: math.MaxInt64}
	if tierspec.Computes(k.Tier) {
		f.Regressor = "flops"
	}
	var ls, fl []float64
	var blocksSeen bool
	nOK := 0
	for _, r := range rows {
		if !OK(r) {
			continue
		}
		nOK++
		var x float64
		if f.Regressor == "flops" {
			x = r.Float(results.ColFLOPS)
			ls = append(ls, float64(r.PrefixTokens))
			fl = append(fl, x)
		} else {
			x = float64(r.Bytes)
		}
		if math.IsNaN(x) || x <= 0 {
			continue
		}
		f.X = append(f.X, x)
		f.Y = append(f.Y, r.Seconds)
		f.MinL = min(f.MinL, r.PrefixTokens)
		f.MaxL = max(f.MaxL, r.PrefixTokens)
		if r.Blocks > 0 && r.Bytes > 0 && r.PrefixTokens > 0 && !blocksSeen {
			blocksSeen = true
			f.BlockBytes = float64(r.Bytes) / float64(r.Blocks)
			f.BlockTokens = (r.PrefixTokens + r.Blocks - 1) / r.Blocks
		}
	}
	f.N = len(f.X)
	switch {
	case nOK == 0:
		return f, errors.New(ErrNoOK)
	case f.N == 0:
		return f, fmt.Errorf("%d ok rows but none with a positive %s column", nOK, f.Regressor)
	}
	if distinct(f.X) < 2 {
		return f, fmt.Errorf("one %s value only, nothing to fit", f.Regressor)
	}
	// Timing noise is relative (a few percent of the time), so the fit
	// minimises relative residuals, and the long prefixes do not drown the
	// short ones that decide alpha.
	f.setLine(FitLine(f.X, f.Y))
	if f.Regressor == "flops" {
		f.FlopsA, f.FlopsB = fitFlops(ls, fl)
	} else if !blocksSeen {
		// No block geometry: treat bytes as proportional to tokens.
		f.BlockTokens = 1
		f.BlockBytes = f.X[0] / float64(f.MinL)
	}
	return f, nil
}

// setLine takes the fitted line: α, the rate (+Inf where the slope is
// not positive), R² and the fit's problems.
func (f *Fit) setLine(l Line) {
	f.Alpha, f.R2, f.Problems = l.Alpha, l.R2, l.Problems
	f.Rate = math.Inf(1)
	if l.Slope > 0 {
		f.Rate = 1 / l.Slope
	}
}

// ErrNoOK starts the reason of a configuration that has no measurement.
const ErrNoOK = "no ok rows"

func distinct(xs []float64) int {
	m := map[float64]bool{}
	for _, x := range xs {
		m[x] = true
	}
	return len(m)
}

// fitFlops fits flops = a·L + b·L² through the origin by least squares
// (the normal equations of two regressors). With one prefix length only it
// returns the linear a.
func fitFlops(ls, fl []float64) (a, b float64) {
	var s2, s3, s4, sy1, sy2 float64
	for i, l := range ls {
		s2 += l * l
		s3 += l * l * l
		s4 += l * l * l * l
		sy1 += fl[i] * l
		sy2 += fl[i] * l * l
	}
	det := s2*s4 - s3*s3
	if distinct(ls) < 2 || math.Abs(det) <= 1e-12*s2*s4 {
		return sy1 / s2, 0
	}
	a = (sy1*s4 - sy2*s3) / det
	b = (s2*sy2 - s3*sy1) / det
	return a, b
}

// BreakEven compares recompute with one fetch configuration.
type BreakEven struct {
	Fetch, Recompute SweepKey
	// L is the smallest prefix at which recompute is no longer cheaper
	// than the fetch; below it recompute wins. Valid when Kind is
	// Crossover.
	L          int64
	Kind       BreakEvenKind
	MinL, MaxL int64 // the measured range searched
}

// BreakEvenKind says how the two cost curves relate within the range.
type BreakEvenKind int

// Break-even outcomes.
const (
	Crossover     BreakEvenKind = iota // recompute cheaper below L, fetch from L on
	RecomputeWins                      // recompute cheaper at every L of the range
	FetchWins                          // fetch cheaper already at the shortest L
)

// String says the outcome in words for tables.
func (b BreakEven) String() string {
	switch b.Kind {
	case Crossover:
		return fmt.Sprintf("%d tokens", b.L)
	case RecomputeWins:
		return fmt.Sprintf("never within the measured range (recompute cheaper up to %d tokens)", b.MaxL)
	default:
		return fmt.Sprintf("none: fetch cheaper at every measured L (from %d tokens on)", b.MinL)
	}
}

// BreakEvens pairs every recompute fit with every fetch fit of the same
// backend and finds the prefix length below which recompute is cheaper,
// searching token by token over the range both measured (the union of
// their prefixes).
func BreakEvens(fits []Fit) []BreakEven {
	var out []BreakEven
	for _, rc := range fits {
		if rc.Regressor != "flops" {
			continue
		}
		for _, fe := range fits {
			if fe.Regressor != "bytes" || fe.Key.Backend != rc.Key.Backend {
				continue
			}
			out = append(out, BreakEvenOf(rc, fe))
		}
	}
	return out
}

// BreakEvenOf is the break-even prefix of fetching fe against recomputing
// with rc.
func BreakEvenOf(rc, fe Fit) BreakEven {
	b := BreakEven{Fetch: fe.Key, Recompute: rc.Key, MinL: min(rc.MinL, fe.MinL), MaxL: max(rc.MaxL, fe.MaxL)}
	if rc.TimeAt(b.MinL) >= fe.TimeAt(b.MinL) {
		b.Kind = FetchWins
		return b
	}
	for L := b.MinL + 1; L <= b.MaxL; L++ {
		if rc.TimeAt(L) >= fe.TimeAt(L) {
			b.Kind, b.L = Crossover, L
			return b
		}
	}
	b.Kind = RecomputeWins
	return b
}

// JoinNonEmpty joins the non-empty parts with sep: the label of a group
// whose key columns may be unrecorded.
func JoinNonEmpty(sep string, parts ...string) string {
	var out []string
	for _, s := range parts {
		if s != "" {
			out = append(out, s)
		}
	}
	return strings.Join(out, sep)
}
