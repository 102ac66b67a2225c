package probe

import (
	"fmt"
	"github.com/kvtier/kvtier/serving"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// How a server counts prompt tokens served by a KV connector (CPU offload,
// a peer, a store) in vllm:external_prefix_cache_queries and _hits. The
// counters have changed meaning twice since they were added; each value
// names what one request adds to them.
const (
	// ExtNone: the server has no external counters (vLLM before 0.11.1,
	// which added them with PR #26245).
	ExtNone = "none"
	// ExtDoubleCount: an asynchronous connector (NIXL, OffloadingConnector)
	// records its queries twice per request, the second time with no hits
	// (vLLM 0.11.1; fixed by PR #28585 in 0.12.0): queries rise by up to
	// twice the prompt.
	ExtDoubleCount = "double-count"
	// ExtWholePrompt: queries rise by the whole prompt, hits by what the
	// connector served (vLLM 0.12.0 to 0.15).
	ExtWholePrompt = "whole-prompt"
	// ExtQueried: queries rise by the tokens past the local prefix-cache
	// hit, the ones actually asked of the connector, and hits count even
	// if the load later fails (PR #30522, from vLLM 0.16.0).
	ExtQueried = "queried"
	// ExtUnknown: the counters are there but the server's version does
	// not say which of the above it follows; any of them is accepted.
	ExtUnknown = "unknown"
	// ExtNoMetrics: the server has no /metrics at all (or it could not
	// be read): no counter says anything.
	ExtNoMetrics = "no /metrics"
)

// A Generation is what a server's counters mean, from its version and
// from the counters its /metrics has.
type Generation struct {
	Version  string // GET /version; "" unknown
	External string // ExtNone ... ExtUnknown
	// BySource: vllm:prompt_tokens_by_source (local_compute,
	// local_cache_hit, external_kv_transfer; PR #33290, vLLM 0.16.0).
	BySource bool
	// CacheTier: vllm:prompt_tokens_cached_by_source (device, host, p2p,
	// disk, external_unspecified; newer vLLM code).
	CacheTier bool
}

// String names the generation, e.g. "queried+by_source".
func (g Generation) String() string {
	s := g.External
	if g.BySource {
		s += "+by_source"
	}
	if g.CacheTier {
		s += "+cache_tier"
	}
	return s
}

// release is a vLLM version as major, minor, patch.
type release [3]int

func (r release) atLeast(o release) bool {
	for i := range r {
		if r[i] != o[i] {
			return r[i] > o[i]
		}
	}
	return true
}

var versionRE = regexp.MustCompile(`^v?(\d+)\.(\d+)(?:\.(\d+))?`)

// parseRelease reads "0.18.1", "v0.11.1rc2", "0.12.0+cu128"; ok is false
// for anything else (a dev build's "0.1.dev1+g...", a non-vLLM server).
func parseRelease(v string) (release, bool) {
	m := versionRE.FindStringSubmatch(strings.TrimSpace(v))
	if m == nil || strings.Contains(v, ".dev") {
		return release{}, false
	}
	var r release
	for i := range 3 {
		r[i], _ = strconv.Atoi(m[i+1])
	}
	return r, true
}

// GenerationOf says what the counters of a server of version (its
// /version, "" when unknown) mean, given one scrape of its /metrics.
//
// Note: the releases are the first ones after each PR's merge date; the
// project's history could not be checked tag by tag, so a version inside
// a boundary release may behave one generation earlier. Verification
// accepts both readings where they differ only in the query count.
func GenerationOf(version string, s serving.Snapshot) Generation {
	g := Generation{Version: version, BySource: s.BySource != nil, CacheTier: s.CachedBySource != nil}
	r, ok := parseRelease(version)
	switch {
	case !s.ExtHits.Found:
		g.External = ExtNone
	case !ok:
		g.External = ExtUnknown
	case r.atLeast(release{0, 16, 0}):
		g.External = ExtQueried
	case r.atLeast(release{0, 12, 0}):
		g.External = ExtWholePrompt
	case r.atLeast(release{0, 11, 1}):
		g.External = ExtDoubleCount
	default:
		g.External = ExtUnknown // counters older than the release that added them: a patched build
	}
	return g
}

// A Check is what one measured request must show: its tier, its prompt
// length, the unit a complete hit may fall short by, and how the
// server's counters count.
type Check struct {
	Tier  string
	L     int // prompt tokens
	Grain int // tokens: the KV block, or the connector's larger unit
	Gen   Generation
}

// missLimit is the cached tokens at which a miss counts as already
// cached: a whole unit, and for a cache that reuses token by token
// (Ollama, llama.cpp) a tenth of the prompt, since any prompt shares its
// BOS, a chat template's head or a word's first letters with an earlier
// one.
func (c Check) missLimit() int {
	if c.Grain > 1 {
		return c.Grain
	}
	return max(1, c.L/10)
}

// need is the least number of tokens a complete hit serves from cache:
// every whole unit but the one holding the last token, which vLLM always
// computes.
func (c Check) need() float64 { return float64(c.L - c.Grain) }

// A Verdict says whether the counters confirm the tier, why not, and
// which counter decided.
type Verdict struct {
	OK     bool
	Reason string
	By     string // "prompt_tokens_cached_by_source", "prompt_tokens_by_source", "external_prefix_cache_hits", ...
}

func fail(by, format string, args ...any) Verdict {
	return Verdict{Reason: fmt.Sprintf(format, args...), By: by}
}

// Verify decides from the counters' movement over one request whether it
// was served from c.Tier, and why not. The most specific counters the
// server has decide:
//
//   - prompt_tokens_cached_by_source: gpu from device, cpu from host,
//     remote from p2p or external_unspecified (a store);
//   - prompt_tokens_by_source: gpu from local_cache_hit, cpu and remote
//     from external_kv_transfer (told apart only by the tier forced);
//   - prefix_cache_hits for miss and gpu, external_prefix_cache_hits for
//     cpu and remote;
//   - without external counters, cpu and remote by elimination: usage's
//     cached_tokens counts local and external hits, prefix_cache_hits
//     only local ones.
//
// A complete hit serves at least L - Grain tokens. Counters that rose by
// more than one request can account for mean other traffic ran meanwhile
// (with the allowance of c.Gen: an asynchronous connector of the
// double-count generation adds its queries twice): the row is then not
// verified, whatever the deltas say. Without counters, gpu and miss fall
// back to usage's cached_tokens.
//
// u is what the response said of its cached prompt tokens: a
// *serving.Usage, or the *serving.Stream, which adds llama.cpp's
// timings.cache_n.
func Verify(c Check, d serving.Delta, metricsErr error, u CacheReport) Verdict {
	if c.Tier != tierMiss && c.L-1 < c.Grain {
		return fail("", "a %d-token prompt holds no complete %d-token unit a cache could serve", c.L, c.Grain)
	}
	if metricsErr != nil {
		return verifyUsage(c, u, fmt.Sprintf("cannot verify: %v", metricsErr))
	}
	if v, busy := concurrent(c, d); busy {
		return v
	}
	switch {
	case d.CachedBySource != nil:
		return verifyTier(c, d.CachedBySource)
	case d.BySource != nil:
		return verifySource(c, d.BySource)
	case c.Tier == tierMiss || c.Tier == tierGPU:
		return verifyLocal(c, d, u)
	case d.ExtFound:
		return verifyExternal(c, d)
	}
	return verifyElimination(c, d, u)
}

// concurrent reports a row whose counters rose by more than the request
// itself explains.
func concurrent(c Check, d serving.Delta) (Verdict, bool) {
	l := float64(c.L)
	if d.PromptFound && d.Prompt > l {
		return fail("prompt_tokens", "concurrent traffic: prompt_tokens rose by %g, more than this request's %d", d.Prompt, c.L), true
	}
	if n := sum(d.BySource); n > l+1 {
		return fail("prompt_tokens_by_source", "concurrent traffic: prompt_tokens_by_source rose by %g in all, more than this request's %d", n, c.L), true
	}
	extBound := l
	if c.Gen.External == ExtDoubleCount || c.Gen.External == ExtUnknown {
		extBound = 2 * l // an async connector's second, empty record
	}
	if d.Hits > l || d.ExtHits > l || d.ExtQueries > extBound || (!d.PromptFound && d.Queries > l) {
		return fail("", "concurrent traffic: counters rose by more than one request of %d tokens explains (queries +%g, hits +%g, external queries +%g, external hits +%g; counters of generation %s); deltas are ambiguous",
			c.L, d.Queries, d.Hits, d.ExtQueries, d.ExtHits, c.Gen), true
	}
	return Verdict{}, false
}

// tierSources are the cache tiers each probe tier must be served from.
var tierSources = map[string][]string{
	tierGPU:    {serving.TierDevice},
	tierCPU:    {serving.TierHost},
	tierRemote: {serving.TierP2P, serving.TierUnspecified},
}

func verifyTier(c Check, m map[string]float64) Verdict {
	const by = "prompt_tokens_cached_by_source"
	if c.Tier == tierMiss {
		if n := sum(m); n >= float64(c.Grain) {
			return fail(by, "%s rose by %g (%s) for a %d-token prompt: it was already cached", by, n, fmtSources(m), c.L)
		}
		return Verdict{OK: true, By: by}
	}
	got := 0.0
	for _, src := range tierSources[c.Tier] {
		got += m[src]
	}
	if got >= c.need() {
		return Verdict{OK: true, By: by}
	}
	return fail(by, "%s rose by %s for a %d-token prompt: the %s tier needs %g tokens from %s",
		by, fmtSources(m), c.L, c.Tier, c.need(), strings.Join(tierSources[c.Tier], " or "))
}

func verifySource(c Check, m map[string]float64) Verdict {
	const by = "prompt_tokens_by_source"
	local, ext := m[serving.SourceLocalHit], m[serving.SourceExternal]
	switch c.Tier {
	case tierMiss:
		if local+ext >= float64(c.Grain) {
			return fail(by, "%s rose by %s for a %d-token prompt: it was already cached", by, fmtSources(m), c.L)
		}
	case tierGPU:
		if local < c.need() {
			return fail(by, "%s rose by %s for a %d-token prompt: the warmed prefix was not served from the GPU prefix cache (prefix caching off?)", by, fmtSources(m), c.L)
		}
	default:
		if ext >= c.need() {
			break
		}
		if c.Tier == tierCPU && local >= c.need() {
			return fail(by, "%s rose by %s for a %d-token prompt: the prefix was still in GPU memory (eviction too small? raise --evict-margin)", by, fmtSources(m), c.L)
		}
		return fail(by, "%s rose by %s for a %d-token prompt: fewer than %g tokens came through a KV connector (%s)", by, fmtSources(m), c.L, c.need(), externalHint(c.Tier))
	}
	return Verdict{OK: true, By: by}
}

func externalHint(tier string) string {
	if tier == tierCPU {
		return "the server has no CPU offload?"
	}
	return "the consumer did not pull the prefix from the producer (no KV connector?)"
}

func sum(m map[string]float64) float64 {
	n := 0.0
	for _, v := range m {
		n += v
	}
	return n
}

// fmtSources writes a source map as "host=8176,device=0", sorted.
func fmtSources(m map[string]float64) string {
	var b strings.Builder
	for i, k := range slices.Sorted(maps.Keys(m)) {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "%s=%g", k, m[k])
	}
	return b.String()
}

// verifyLocal checks miss and gpu from prefix_cache_hits (with the
// external hits for miss), else from usage's cached_tokens.
func verifyLocal(c Check, d serving.Delta, u CacheReport) Verdict {
	if !d.HitsFound {
		return verifyUsage(c, u, "cannot verify: /metrics has no vllm:prefix_cache_hits and usage has no cached_tokens")
	}
	const by = "prefix_cache_hits"
	if c.Tier == tierMiss {
		if got := d.Hits + d.ExtHits; got >= float64(c.Grain) {
			return fail(by, "prefix_cache_hits rose by %g (external %g) of %d: the prompt was already cached", d.Hits, d.ExtHits, c.L)
		}
		return Verdict{OK: true, By: by}
	}
	if d.Hits >= c.need() {
		return Verdict{OK: true, By: by}
	}
	return fail(by, "prefix_cache_hits rose by %g of %d: the warmed prefix was not served from the GPU prefix cache (prefix caching off?)", d.Hits, c.L)
}

// verifyExternal checks cpu and remote from external_prefix_cache_hits.
func verifyExternal(c Check, d serving.Delta) Verdict {
	const by = "external_prefix_cache_hits"
	if d.ExtHits >= c.need() {
		return Verdict{OK: true, By: by}
	}
	if c.Tier == tierCPU && d.HitsFound && d.Hits >= c.need() {
		return fail(by, "prefix_cache_hits rose by %g of %d and external_prefix_cache_hits by %g: the prefix was still in GPU memory (eviction too small? raise --evict-margin)", d.Hits, c.L, d.ExtHits)
	}
	return fail(by, "external_prefix_cache_hits rose by %g of %d: %s", d.ExtHits, c.L, externalHint(c.Tier))
}

// verifyElimination checks cpu and remote on a server without external
// counters: what usage says was cached and the local cache did not serve
// came through a connector.
func verifyElimination(c Check, d serving.Delta, u CacheReport) Verdict {
	const by = "usage.cached_tokens - prefix_cache_hits"
	cached, ok := u.CachedTokens()
	if !ok || !d.HitsFound {
		return fail("", "cannot verify: /metrics has no vllm:external_prefix_cache_hits (counters of generation %s) and usage has no cached_tokens (--enable-prompt-tokens-details): a GPU hit cannot be told from a %s hit", c.Gen, c.Tier)
	}
	if ext := float64(cached) - d.Hits; ext >= c.need() {
		return Verdict{OK: true, By: by}
	}
	if c.Tier == tierCPU && d.Hits >= c.need() {
		return fail(by, "prefix_cache_hits rose by %g of %d: the prefix was still in GPU memory (eviction too small? raise --evict-margin)", d.Hits, c.L)
	}
	return fail(by, "usage reports %d cached tokens of %d and prefix_cache_hits rose by %g: %s", cached, c.L, d.Hits, externalHint(c.Tier))
}

// verifyUsage checks miss and gpu from usage's cached_tokens alone (the
// counters are missing or unreadable); cpu and remote cannot be told from
// a GPU hit so, and say why.
func verifyUsage(c Check, u CacheReport, why string) Verdict {
	by := reportedBy(u)
	cached, ok := u.CachedTokens()
	switch {
	case !ok || (c.Tier != tierMiss && c.Tier != tierGPU):
		return fail("", "%s", why)
	case c.Tier == tierMiss && cached >= c.missLimit():
		return fail(by, "%s reports %d cached tokens of %d: the prompt was already cached", by, cached, c.L)
	case c.Tier == tierGPU && float64(cached) < c.need():
		return fail(by, "usage reports %d cached tokens of %d: the warmed prefix was not served from cache", cached, c.L)
	}
	return Verdict{OK: true, By: by}
}

// A CacheReport is what a response said of its prompt tokens served from
// the prefix cache: *serving.Usage (prompt_tokens_details.cached_tokens)
// or *serving.Stream (that, or llama.cpp's timings.cache_n).
type CacheReport interface {
	CachedTokens() (int, bool)
}

// reportedBy names where r's cached tokens came from.
func reportedBy(r CacheReport) string {
	if s, ok := r.(interface{ Cached() (int, string, bool) }); ok {
		if _, src, ok := s.Cached(); ok && (src == serving.CachedFromTimings || src == serving.SourceServerLog) {
			return src
		}
	}
	return "usage.cached_tokens"
}
