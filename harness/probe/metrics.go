package probe

import (
	"fmt"
	"io"
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
	hitNames = []string{
		"vllm:prefix_cache_hits_total", "vllm:prefix_cache_hits",
		"vllm:gpu_prefix_cache_hits_total", "vllm:gpu_prefix_cache_hits",
	}
	queryNames = []string{
		"vllm:prefix_cache_queries_total", "vllm:prefix_cache_queries",
		"vllm:gpu_prefix_cache_queries_total", "vllm:gpu_prefix_cache_queries",
	}
	extHitNames   = []string{"vllm:external_prefix_cache_hits_total", "vllm:external_prefix_cache_hits"}
	extQueryNames = []string{"vllm:external_prefix_cache_queries_total", "vllm:external_prefix_cache_queries"}
)

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
	// CacheConfig holds the labels of vllm:cache_config_info (block_size,
	// num_gpu_blocks, num_cpu_blocks, ...); nil when it is absent.
	CacheConfig map[string]string
}

// BlockSize returns cache_config_info's block_size, 0 when unknown.
func (s Snapshot) BlockSize() int { return s.configInt("block_size") }

// GPUBlocks returns cache_config_info's num_gpu_blocks, 0 when unknown.
func (s Snapshot) GPUBlocks() int { return s.configInt("num_gpu_blocks") }

func (s Snapshot) configInt(k string) int {
	v, err := strconv.Atoi(s.CacheConfig[k])
	if err != nil || v < 0 {
		return 0
	}
	return v
}

// ParseMetrics parses a Prometheus text exposition. Counters are summed
// over their label sets; when model is not empty and some series carry a
// model_name label equal to it, only those count (a server may serve
// several models). Names with ':' (vLLM's) are accepted.
func ParseMetrics(r io.Reader, model string) (Snapshot, error) {
	p := expfmt.NewTextParser(utf8Names)
	fams, err := p.TextToMetricFamilies(r)
	if err != nil {
		return Snapshot{}, fmt.Errorf("parsing /metrics: %w", err)
	}
	var s Snapshot
	s.Hits = counter(fams, hitNames, model)
	s.Queries = counter(fams, queryNames, model)
	s.ExtHits = counter(fams, extHitNames, model)
	s.ExtQueries = counter(fams, extQueryNames, model)
	if f, ok := fams["vllm:cache_config_info"]; ok && len(f.Metric) > 0 {
		s.CacheConfig = map[string]string{}
		for _, l := range f.Metric[0].Label {
			s.CacheConfig[l.GetName()] = l.GetValue()
		}
	}
	return s, nil
}

var utf8Names = model.UTF8Validation

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

func label(m *dto.Metric, name string) string {
	for _, l := range m.Label {
		if l.GetName() == name {
			return l.GetValue()
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
}

// Sub returns after minus before.
func Sub(before, after Snapshot) Delta {
	return Delta{
		Hits:       after.Hits.Value - before.Hits.Value,
		Queries:    after.Queries.Value - before.Queries.Value,
		ExtHits:    after.ExtHits.Value - before.ExtHits.Value,
		ExtQueries: after.ExtQueries.Value - before.ExtQueries.Value,
		HitsFound:  before.Hits.Found && after.Hits.Found,
		ExtFound:   before.ExtHits.Found && after.ExtHits.Found,
	}
}
