package serving

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Counter names a server may expose for one quantity, preferred first.
// vLLM renamed gpu_prefix_cache_* to prefix_cache_* in 0.10 (the old
// names were hidden in 0.11 and removed later); the Prometheus client
// exposes counters with a _total suffix, older exporters without.
var (
	// SGLang counts at each request's end its whole prompt in
	// sglang:prompt_tokens_total and the part its radix cache served in
	// sglang:cached_tokens_total (python/sglang/srt/metrics/collector.py,
	// observe_one_finished_request): the same hits and queries.
	hitNames = []string{
		"vllm:prefix_cache_hits_total", "vllm:prefix_cache_hits",
		"vllm:gpu_prefix_cache_hits_total", "vllm:gpu_prefix_cache_hits",
		"sglang:cached_tokens_total",
	}
	queryNames = []string{
		"vllm:prefix_cache_queries_total", "vllm:prefix_cache_queries",
		"vllm:gpu_prefix_cache_queries_total", "vllm:gpu_prefix_cache_queries",
		"sglang:prompt_tokens_total",
	}
	extHitNames    = []string{"vllm:external_prefix_cache_hits_total", "vllm:external_prefix_cache_hits"}
	extQueryNames  = []string{"vllm:external_prefix_cache_queries_total", "vllm:external_prefix_cache_queries"}
	promptNames    = []string{"vllm:prompt_tokens_total", "vllm:prompt_tokens", "sglang:prompt_tokens_total"}
	bySourceNames  = []string{"vllm:prompt_tokens_by_source_total", "vllm:prompt_tokens_by_source"}
	cachedSrcNames = []string{"vllm:prompt_tokens_cached_by_source_total", "vllm:prompt_tokens_cached_by_source"}
)

// The sources of vllm:prompt_tokens_by_source (vLLM PR #33290): where each
// prompt token's KV came from.
const (
	SourceCompute  = "local_compute"        // prefilled here
	SourceLocalHit = "local_cache_hit"      // the GPU prefix cache
	SourceExternal = "external_kv_transfer" // a KV connector: CPU offload, a peer, a store
)

// The sources of vllm:prompt_tokens_cached_by_source (newer vLLM code):
// the cache tier each cached prompt token came from.
const (
	TierDevice      = "device"               // the GPU prefix cache
	TierHost        = "host"                 // CPU offload
	TierP2P         = "p2p"                  // engine to engine (NIXL, Mooncake transfer)
	TierDisk        = "disk"                 // file-system offload
	TierUnspecified = "external_unspecified" // a store (Mooncake Store) or an uninstrumented connector
)

// maxServerCount bounds a count a server reports (blocks, tokens): past
// it the figure is nonsense and taken as unknown.
const maxServerCount = 1 << 40

// A Counter is one counter read from /metrics: its value, summed over the
// series that match the model, and whether the server exposes it at all.
type Counter struct {
	Value float64
	Found bool
	Name  string // the name it was found under
}

// A Snapshot is what one scrape of /metrics said about the prefix cache.
type Snapshot struct {
	Hits, Queries       Counter // prefix_cache_hits / queries (tokens)
	ExtHits, ExtQueries Counter // external_prefix_cache_hits / queries (tokens)
	Prompt              Counter // prompt_tokens: every prompt token, once, when its prefill ends
	// BySource holds prompt_tokens_by_source per source label, and
	// CachedBySource prompt_tokens_cached_by_source; nil where absent.
	BySource, CachedBySource map[string]float64
	// CacheConfig holds the labels of vllm:cache_config_info (block_size,
	// num_gpu_blocks, num_cpu_blocks, ...); nil when it is absent.
	CacheConfig map[string]string
	// SimLag is kvtier sim's kvtier_sim_lag_seconds: the most its engine
	// fell behind real time since it started (not Found on any other
	// server). SimScrape is the number kvtier sim gave this scrape, and
	// SimLagSince the most it fell behind since each of its last scrapes,
	// by number (kvtier_sim_lag_since_seconds; nil where absent).
	SimLag, SimScrape Counter
	SimLagSince       map[string]float64
}

// BlockSize returns cache_config_info's block_size, 0 when unknown.
func (s Snapshot) BlockSize() int { return s.configInt("block_size") }

// BlockSizeOr returns the server's KV block size and where it came
// from: given (the --block-size flag), when positive; else
// cache_config_info's; else vLLM's default of 16 tokens, assumed.
func (s Snapshot) BlockSizeOr(given int) (int, string) {
	switch {
	case given > 0:
		return given, "--block-size"
	case s.BlockSize() > 0:
		return s.BlockSize(), "vllm:cache_config_info"
	}
	return 16, "assumed (vLLM default; vllm:cache_config_info missing)"
}

// BlockSizeFor is BlockSizeOr for a server of family f: a family other
// than vLLM (or an unknown one) has no vLLM default to assume. Where its
// prefix cache reuses tokens one by one (llama.cpp, Ollama, SGLang's
// default page) the grain is 1 and a block does not apply; where the
// family hides its block (TGI, TensorRT-LLM) it is unknown and 16 is
// only the grain kvtier groups prompts by.
func (s Snapshot) BlockSizeFor(given int, f Family) (int, string) {
	if given > 0 || s.BlockSize() > 0 || f.VLLMLike() {
		return s.BlockSizeOr(given)
	}
	t := f.Traits()
	if t.Grain > 0 {
		return t.Grain, fmt.Sprintf("not applicable: %s reuses its prompt cache token by token", t.Title)
	}
	return 16, fmt.Sprintf("unknown: %s does not expose its KV block (16 tokens used as the grain)", t.Title)
}

// GPUBlocks returns cache_config_info's num_gpu_blocks, 0 when unknown.
func (s Snapshot) GPUBlocks() int { return s.configInt("num_gpu_blocks") }

// CPUBlocks returns cache_config_info's num_cpu_blocks, 0 when unknown
// ("None" or absent).
func (s Snapshot) CPUBlocks() int { return s.configInt("num_cpu_blocks") }

func (s Snapshot) configInt(k string) int {
	v, err := strconv.Atoi(s.CacheConfig[k])
	if err != nil || v < 0 || v > maxServerCount>>10 {
		return 0 // not a figure to size anything with
	}
	return v
}

// ParseMetrics parses a Prometheus text exposition. Counters are summed
// over their label sets; when model is not empty and some series carry a
// model_name label equal to it, only those count (a server may serve
// several models). Names with ':' (vLLM's) are accepted.
func ParseMetrics(r io.Reader, model string) (Snapshot, error) {
	text, err := io.ReadAll(r)
	if err != nil {
		return Snapshot{}, fmt.Errorf("reading /metrics: %w", err)
	}
	p := expfmt.NewTextParser(utf8Names)
	fams, err := p.TextToMetricFamilies(bytes.NewReader(text))
	if err != nil {
		return Snapshot{}, fmt.Errorf("parsing /metrics: %s", ServerText(err.Error()))
	}
	declared(fams, text, hitNames, queryNames, promptNames)
	var s Snapshot
	s.Hits = counter(fams, hitNames, model)
	s.Queries = counter(fams, queryNames, model)
	s.ExtHits = counter(fams, extHitNames, model)
	s.ExtQueries = counter(fams, extQueryNames, model)
	s.Prompt = counter(fams, promptNames, model)
	s.BySource = byLabel(fams, bySourceNames, "source", model)
	s.CachedBySource = byLabel(fams, cachedSrcNames, "source", model)
	s.SimLag = counter(fams, []string{"kvtier_sim_lag_seconds"}, model)
	s.SimScrape = counter(fams, []string{"kvtier_sim_scrape"}, model)
	s.SimLagSince = byLabel(fams, []string{"kvtier_sim_lag_since_seconds"}, "scrape", model)
	if err := s.check(); err != nil {
		return Snapshot{}, err
	}
	if f, ok := fams["vllm:cache_config_info"]; ok && len(f.Metric) > 0 {
		s.CacheConfig = map[string]string{}
		for _, l := range f.Metric[0].Label {
			s.CacheConfig[ServerText(l.GetName())] = ServerText(l.GetValue())
		}
	}
	return s, nil
}

var utf8Names = model.UTF8Validation

// check refuses a scrape whose counters hold what no counter can (NaN,
// an infinity, a negative value, a count past maxServerCount): nothing
// could be verified by its deltas.
func (s Snapshot) check() error {
	for _, c := range []Counter{s.Hits, s.Queries, s.ExtHits, s.ExtQueries, s.Prompt, s.SimLag, s.SimScrape} {
		if err := checkCount(c.Name, c.Value); c.Found && err != nil {
			return err
		}
	}
	for _, m := range []map[string]float64{s.BySource, s.CachedBySource, s.SimLagSince} {
		for k, v := range m {
			if err := checkCount("the series labelled "+k, v); err != nil {
				return err
			}
		}
	}
	return nil
}

// checkCount says why v, a counter's value, is none.
func checkCount(name string, v float64) error {
	if math.IsNaN(v) || v < 0 || v > maxServerCount {
		return fmt.Errorf("parsing /metrics: %s is %g, which no counter can be: its counters verify nothing", name, v)
	}
	return nil
}

// declared adds, for each of names that text declares (# TYPE) without
// a series, an empty family: a labelled counter no request has touched
// yet (SGLang's cached tokens before the first hit) is there, at 0.
func declared(fams map[string]*dto.MetricFamily, text []byte, names ...[]string) {
	for _, ns := range names {
		for _, n := range ns {
			if _, ok := fams[n]; !ok && bytes.Contains(text, []byte("# TYPE "+n+" ")) {
				fams[n] = &dto.MetricFamily{}
			}
		}
	}
}

func counter(fams map[string]*dto.MetricFamily, names []string, modelName string) Counter {
	for _, n := range names {
		f, ok := fams[n]
		if !ok {
			continue
		}
		c := Counter{Found: true, Name: n}
		matched := false
		if modelName != "" {
			for _, m := range f.Metric {
				if label(m, "model_name") == modelName {
					matched = true
					c.Value += value(m)
				}
			}
		}
		if !matched {
			for _, m := range f.Metric {
				c.Value += value(m)
			}
		}
		return c
	}
	return Counter{}
}

// byLabel sums the series of the first of names found per value of
// label, over the series of the model when some carry it; nil when no
// name is there.
func byLabel(fams map[string]*dto.MetricFamily, names []string, lab, modelName string) map[string]float64 {
	for _, n := range names {
		f, ok := fams[n]
		if !ok {
			continue
		}
		matched := modelName != "" && slices.ContainsFunc(f.Metric, func(m *dto.Metric) bool { return label(m, "model_name") == modelName })
		out := map[string]float64{}
		for _, m := range f.Metric {
			if matched && label(m, "model_name") != modelName {
				continue
			}
			out[label(m, lab)] += value(m)
		}
		return out
	}
	return nil
}

// label returns the value of m's label name, as ServerText keeps it.
func label(m *dto.Metric, name string) string {
	for _, l := range m.Label {
		if l.GetName() == name {
			return ServerText(l.GetValue())
		}
	}
	return ""
}

func value(m *dto.Metric) float64 {
	switch {
	case m.Counter != nil:
		return m.Counter.GetValue()
	case m.Gauge != nil:
		return m.Gauge.GetValue()
	case m.Untyped != nil:
		return m.Untyped.GetValue()
	}
	return 0
}

// A Delta is how the counters moved over one request.
type Delta struct {
	Hits, Queries, ExtHits, ExtQueries float64
	HitsFound, ExtFound                bool
	Prompt                             float64 // prompt_tokens
	PromptFound                        bool
	// BySource and CachedBySource are the moves of the labelled
	// counters, nil where the server lacks them.
	BySource, CachedBySource map[string]float64
	// SimLag is the most kvtier sim fell behind real time between the
	// scrapes (see SimLagBetween). SimLagFound is false where the server
	// is no kvtier sim.
	SimLag      float64
	SimLagFound bool
}

// Sub returns after minus before.
func Sub(before, after Snapshot) Delta {
	return Delta{
		Hits:           after.Hits.Value - before.Hits.Value,
		Queries:        after.Queries.Value - before.Queries.Value,
		ExtHits:        after.ExtHits.Value - before.ExtHits.Value,
		ExtQueries:     after.ExtQueries.Value - before.ExtQueries.Value,
		HitsFound:      before.Hits.Found && after.Hits.Found,
		ExtFound:       before.ExtHits.Found && after.ExtHits.Found,
		Prompt:         after.Prompt.Value - before.Prompt.Value,
		PromptFound:    before.Prompt.Found && after.Prompt.Found,
		BySource:       subMap(before.BySource, after.BySource),
		CachedBySource: subMap(before.CachedBySource, after.CachedBySource),
		SimLag:         SimLagBetween(before, after),
		SimLagFound:    before.SimLag.Found && after.SimLag.Found,
	}
}

// SimLagBetween returns the most kvtier sim fell behind real time
// between two scrapes: what the later one says of the time since the
// earlier one (kvtier_sim_lag_since_seconds of its number). Where it
// does not say (a simulator of an older kvtier, or more scrapes in
// between than it keeps), it is the most over the simulator's life, an
// upper bound: never how much that running maximum rose, which says
// nothing when the simulator had fallen as far behind before.
func SimLagBetween(before, after Snapshot) float64 {
	if !before.SimScrape.Found {
		return after.SimLag.Value
	}
	if v, ok := after.SimLagSince[strconv.FormatFloat(before.SimScrape.Value, 'f', -1, 64)]; ok {
		return v
	}
	return after.SimLag.Value
}

// subMap is after - before per key; nil unless both scrapes had the counter.
func subMap(before, after map[string]float64) map[string]float64 {
	if before == nil || after == nil {
		return nil
	}
	d := make(map[string]float64, len(after))
	for k, v := range after {
		d[k] = v - before[k]
	}
	return d
}
