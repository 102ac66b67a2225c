package workload

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/kvtier/kvtier/option"
)

// A Route says how a router spreads requests over instances.
type Route string

// Routes.
const (
	RouteRandom  Route = "random"  // uniformly, seeded
	RouteSession Route = "session" // by session: a session stays on one instance
	RouteHash    Route = "hash"    // by the first block's hash id: equal prefixes meet
)

// Routes lists the routes in the order help shows them.
func Routes() []Route { return []Route{RouteRandom, RouteSession, RouteHash} }

// A Touch says in which order a request's blocks become the most recently
// used once it has been looked up.
type Touch string

// Touch orders.
const (
	// TouchForward touches block 0 first, so the last block ends most
	// recent and a cache evicts a prefix from its head.
	TouchForward Touch = "forward"
	// TouchReverse touches the last block first, so block 0 ends most
	// recent and a cache evicts from the tail, as vLLM frees a finished
	// request's blocks tail first.
	TouchReverse Touch = "reverse"
)

// AnalyzeOptions say what an Analyzer computes.
type AnalyzeOptions struct {
	BytesPerToken int64     // KV bytes of one token, from the model geometry
	Windows       []float64 // working-set window lengths, seconds (option "window")
	// Instances are the instance counts to evaluate behind a router, one
	// curve each (option "instances"); 1 is always evaluated.
	Instances []int
	Route     Route   // option "route"
	Seed      uint64  // of random routing
	Touch     Touch   // option "touch"; "" is TouchForward
	Sample    float64 // SHARDS sampling rate in (0, 1]; 0 or 1 is exact (option "sample")
	// SharedSessions is how many sessions must reference a hash id for
	// its cross-session hits to count as shared prefix (option
	// "shared-sessions").
	SharedSessions int
	// Knees are the shares of the ceiling whose smallest capacity the
	// analysis reports, in (0, 1] (option "knees", in per cent); nil is
	// DefaultKnees.
	Knees []float64
	// OnRequest, when not nil, is called after each request with the
	// stack distances of its blocks in one cache. Exact analysis only:
	// under sampling the distances of most blocks are not known.
	OnRequest func(*Request, *Hits)
}

// DefaultKnees are the default AnalyzeOptions.Knees: 50, 90, 95 and
// 99 % of the ceiling.
var DefaultKnees = []float64{0.5, 0.9, 0.95, 0.99}

// sortedKnees returns the knees ascending, each once.
func sortedKnees(k []float64) []float64 {
	out := slices.Clone(k)
	slices.Sort(out)
	return slices.Compact(out)
}

// DefaultSharedSessions is the default AnalyzeOptions.SharedSessions: a
// hash two sessions share is a fork or a copy, one three or more share is
// a common prefix such as a system prompt.
const DefaultSharedSessions = 3

// Validate reports every unusable option, naming it.
func (o AnalyzeOptions) Validate() error {
	var errs []error
	if o.BytesPerToken <= 0 {
		errs = append(errs, option.Errorf("model", "KV bytes per token %d: must be positive", o.BytesPerToken))
	}
	for _, w := range o.Windows {
		if !(w > 0) || math.IsInf(w, 0) {
			errs = append(errs, option.Errorf("window", "%gs: must be a positive duration", w))
		}
	}
	for _, n := range o.Instances {
		errs = append(errs, option.Range("instances", n, 1, 4096))
	}
	if !slices.Contains(Routes(), o.Route) && o.Route != "" {
		errs = append(errs, option.Errorf("route", "%q: want random, session or hash", o.Route))
	}
	if o.Touch != "" && o.Touch != TouchForward && o.Touch != TouchReverse {
		errs = append(errs, option.Errorf("touch", "%q: want forward or reverse", o.Touch))
	}
	if o.Sample < 0 || o.Sample > 1 || math.IsNaN(o.Sample) {
		errs = append(errs, option.Errorf("sample", "%g: must be in (0, 1] (1: exact)", o.Sample))
	}
	if o.Sample > 0 && o.Sample < 1 && o.OnRequest != nil {
		errs = append(errs, option.Errorf("sample", "per-request distances need the exact analysis: drop sampling"))
	}
	errs = append(errs, option.Range("shared-sessions", o.SharedSessions, 0, maxLength))
	for _, k := range o.Knees {
		if !(k > 0 && k <= 1) {
			errs = append(errs, option.Errorf("knees", "%g %%: want a share of the ceiling above 0 and at most 100 %%", 100*k))
		}
	}
	return errors.Join(errs...)
}

// shardsGroups is how many independent hash-partitioned sub-samples a
// SHARDS analysis keeps: their spread gives the error bound.
const shardsGroups = 8

// An Analyzer computes a trace's reuse, LRU hit-ratio curves and working
// sets in one pass over its requests (in timestamp order).
type Analyzer struct {
	o         AnalyzeOptions
	sampled   bool
	threshold uint64 // a block is sampled when its mixed hash >> 40 is below it
	groups    []*group
	sessioned bool
	hits      Hits

	requests        int
	refs            int64
	input, hashed   int64
	inputs, outputs []int32
	thinks          []float64
	sessionIdx      blockIndex // session -> index into sessionTokens
	sessionTokens   []int64    // per session seen: its input tokens
	first, last     float64
	windows         []*workingSet
	routeSeed       uint64
	member          []int        // per block of the current request: its group, memberExact or memberNone
	blocksOf        [][]int32    // per group: the positions of the current request's blocks in it
	exact           *exactBlocks // under SHARDS: the hash ids that opened a request, tracked exactly
	sampleKey       uint64       // mixed into every hash id before sampling: the seed's draw
}

// NewAnalyzer returns an Analyzer for the options.
func NewAnalyzer(o AnalyzeOptions) (*Analyzer, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	if o.Route == "" {
		o.Route = RouteRandom
	}
	if o.Touch == "" {
		o.Touch = TouchForward
	}
	if o.SharedSessions == 0 {
		o.SharedSessions = DefaultSharedSessions
	}
	if o.Knees == nil {
		o.Knees = DefaultKnees
	}
	o.Instances = instanceCounts(o.Instances)
	a := &Analyzer{o: o, routeSeed: mix(o.Seed ^ 0x9e3779b97f4a7c15),
		sampleKey: mix(o.Seed ^ 0x5348415244532121)}
	n := 1
	if o.Sample > 0 && o.Sample < 1 {
		a.sampled, n = true, shardsGroups
		a.threshold = uint64(math.Ceil(o.Sample * (1 << 24)))
		a.exact = &exactBlocks{sets: newSessionSets()}
	}
	for range n {
		a.groups = append(a.groups, newGroup(o, a.rate()))
	}
	a.blocksOf = make([][]int32, n)
	for _, w := range o.Windows {
		a.windows = append(a.windows, &workingSet{w: w, step: w / 10})
	}
	return a, nil
}

// instanceCounts returns counts sorted, deduplicated, with 1 first.
func instanceCounts(in []int) []int {
	out := append([]int{1}, in...)
	slices.Sort(out)
	return slices.Compact(out)
}

// rate is the sampling rate of one group.
func (a *Analyzer) rate() float64 {
	if !a.sampled {
		return 1
	}
	return float64(a.threshold) / (1 << 24) / shardsGroups
}

// Membership of a block that is in no group's sample, or in every group
// tracked exactly.
const (
	memberNone  = -1
	memberExact = -2
)

// classify fills a.member for request r: under SHARDS, a hash id that
// has opened a request (block 0, shared by every request of a prefix
// tree, so referenced more than any block under it) is tracked exactly
// in every group; any other is sampled by its hash. A block referenced
// by every request would otherwise decide the estimate by whether the
// draw caught it, and no spread of the sub-samples could show that.
func (a *Analyzer) classify(r *Request) {
	a.member = a.member[:0]
	for gi := range a.blocksOf {
		a.blocksOf[gi] = a.blocksOf[gi][:0]
	}
	if a.exact != nil {
		a.exact.start()
	}
	for k, h := range r.Hashes {
		mixed := a.mixed(h)
		m := a.groupOf(mixed)
		if a.exact != nil && a.exact.classify(h, mixed, k == 0, r.Session) {
			m = memberExact
		}
		a.member = append(a.member, m)
		switch m {
		case memberNone:
		case memberExact:
			for gi := range a.blocksOf {
				a.blocksOf[gi] = append(a.blocksOf[gi], int32(k))
			}
		default:
			a.blocksOf[m] = append(a.blocksOf[m], int32(k))
		}
	}
}

// mixed returns hash id h mixed with a key drawn from the seed, so every
// id (id 0 included) is sampled with the same probability and another
// seed draws another sample.
func (a *Analyzer) mixed(h uint64) uint64 { return mix(h ^ a.sampleKey) }

// groupOf returns the group the block of mixed hash m (a.mixed) is
// sampled into, -1 for none: the top 24 bits of the mix decide whether
// it is sampled, the low 3 bits its group.
func (a *Analyzer) groupOf(m uint64) int {
	if !a.sampled {
		return 0
	}
	if m>>40 >= a.threshold {
		return memberNone
	}
	return int(m % shardsGroups)
}

// mix is SplitMix64's finaliser: a bijection that spreads hash ids.
func mix(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	return x ^ x>>31
}

// Add analyses the next request; requests must come in timestamp order.
func (a *Analyzer) Add(r *Request) error {
	if a.requests > 0 && r.Time < a.last {
		return fmt.Errorf("request %d (line %d): time %g s before the previous request's %g s", r.Index, r.Line, r.Time, a.last)
	}
	if a.requests == 0 {
		a.first, a.sessioned = r.Time, r.Sessioned
	}
	a.observe(r)
	a.classify(r)
	for gi, g := range a.groups {
		g.collect(r, a.blocksOf[gi], a.member)
		g.ceiling(r.Session, a.sessioned, a.exact)
		for ni, n := range a.o.Instances {
			inst := a.route(r, n)
			g.lookup(ni, inst)
			if a.o.OnRequest != nil && ni == 0 {
				a.hits.fill(r, g)
			}
		}
		g.touch(r, a.o, a.sessioned, a.exact, a.instancesOf(r))
	}
	if a.exact != nil && a.sessioned {
		a.exact.record(r.Session)
	}
	if a.o.OnRequest != nil {
		a.o.OnRequest(r, &a.hits)
	}
	for i, ws := range a.windows {
		blocks := 0.0
		for _, g := range a.groups {
			blocks += float64(g.windows[i].blocks(g.stacks[0][0], r.Time)) / float64(g.unit)
		}
		ws.observe(r.Time, blocks/a.rate()/float64(len(a.groups)))
	}
	return nil
}

// observe counts the request's lengths and session.
func (a *Analyzer) observe(r *Request) {
	if a.requests == 0 {
		for _, ws := range a.windows {
			ws.start = r.Time
		}
	}
	a.requests++
	a.last = r.Time
	a.refs += int64(len(r.Hashes))
	a.input += int64(r.Input)
	a.hashed += int64(r.HashedTokens())
	a.inputs = append(a.inputs, int32(r.Input))
	a.outputs = append(a.outputs, int32(r.Output))
	if r.HasParent() {
		a.thinks = append(a.thinks, r.Think)
	}
	i, ok := a.sessionIdx.get(uint64(r.Session))
	if !ok {
		i = a.sessionIdx.add(uint64(r.Session))
		a.sessionTokens = append(a.sessionTokens, 0)
	}
	a.sessionTokens[i] += int64(r.Input)
}

// route returns the instance of n that request r goes to.
func (a *Analyzer) route(r *Request, n int) int {
	if n == 1 {
		return 0
	}
	var key uint64
	switch a.o.Route {
	case RouteSession:
		key = uint64(r.Session)
	case RouteHash:
		key = uint64(r.Index)
		if len(r.Hashes) > 0 {
			key = r.Hashes[0]
		}
	default:
		key = uint64(r.Index) ^ a.routeSeed
	}
	return int(mix(key^uint64(a.o.Route[0])) % uint64(n))
}

// instancesOf returns the instance of every instance count r goes to.
func (a *Analyzer) instancesOf(r *Request) func(ni int) int {
	return func(ni int) int { return a.route(r, a.o.Instances[ni]) }
}
