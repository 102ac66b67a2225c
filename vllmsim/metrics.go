package vllmsim

import (
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"
)

// ttftBuckets are the upper bounds of vLLM's
// vllm:time_to_first_token_seconds histogram (v1/metrics/loggers.py).
var ttftBuckets = []float64{
	0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5,
	0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0,
}

// A histogram is a Prometheus histogram: cumulative counts per bucket
// are computed when written.
type histogram struct {
	bounds []float64
	counts []uint64 // per bucket, not cumulative; the last is +Inf
	sum    float64
	count  uint64
}

func newHistogram(bounds []float64) histogram {
	return histogram{bounds: bounds, counts: make([]uint64, len(bounds)+1)}
}

func (h *histogram) observe(v float64) {
	i := sort.SearchFloat64s(h.bounds, v) // first bound >= v: le is inclusive
	h.counts[i]++
	h.sum += v
	h.count++
}

// A snapshot is what /metrics shows, copied under the engine's lock.
type snapshot struct {
	running, waiting int
	usage            float64
	c                counters
	// lag is the most the engine fell behind over its life, lagMarks
	// the most since each earlier scrape kept, scrape this one's number.
	lag      time.Duration
	lagMarks []lagMark
	scrape   uint64
}

// An expositionWriter writes the Prometheus text format (0.0.4) as
// Python's prometheus_client does, which is what vLLM serves: counters
// as NAME_total plus a NAME_created gauge, floats with a decimal point,
// labels in declaration order.
type expositionWriter struct {
	w      io.Writer
	labels string // `model_name="...",engine="0"`
	create float64
	err    error
}

func (x *expositionWriter) printf(format string, args ...any) {
	if x.err == nil {
		_, x.err = fmt.Fprintf(x.w, format, args...)
	}
}

func (x *expositionWriter) header(name, typ, help string) {
	x.printf("# HELP %s %s\n# TYPE %s %s\n", name, escapeHelp(help), name, typ)
}

func (x *expositionWriter) gauge(name, help string, v float64) {
	x.header(name, "gauge", help)
	x.printf("%s{%s} %s\n", name, x.labels, pyFloat(v))
}

func (x *expositionWriter) counter(name, help string, v float64) {
	x.header(name+"_total", "counter", help)
	x.printf("%s_total{%s} %s\n", name, x.labels, pyFloat(v))
	x.header(name+"_created", "gauge", help)
	x.printf("%s_created{%s} %s\n", name, x.labels, pyFloat(x.create))
}

// labelled writes a counter with one series per value of label.
func (x *expositionWriter) labelled(name, help, label string, values []string, v []float64) {
	x.header(name+"_total", "counter", help)
	for i, lv := range values {
		x.printf("%s_total{%s,%s=\"%s\"} %s\n", name, x.labels, label, escapeLabel(lv), pyFloat(v[i]))
	}
	x.header(name+"_created", "gauge", help)
	for _, lv := range values {
		x.printf("%s_created{%s,%s=\"%s\"} %s\n", name, x.labels, label, escapeLabel(lv), pyFloat(x.create))
	}
}

func (x *expositionWriter) histogram(name, help string, h histogram) {
	x.header(name, "histogram", help)
	var cum uint64
	for i, b := range h.bounds {
		cum += h.counts[i]
		x.printf("%s_bucket{%s,le=\"%s\"} %s\n", name, x.labels, pyFloat(b), pyFloat(float64(cum)))
	}
	cum += h.counts[len(h.bounds)]
	x.printf("%s_bucket{%s,le=\"+Inf\"} %s\n", name, x.labels, pyFloat(float64(cum)))
	x.printf("%s_count{%s} %s\n", name, x.labels, pyFloat(float64(h.count)))
	x.printf("%s_sum{%s} %s\n", name, x.labels, pyFloat(h.sum))
	x.header(name+"_created", "gauge", help)
	x.printf("%s_created{%s} %s\n", name, x.labels, pyFloat(x.create))
}

// pyFloat formats v as Python's repr of a float: "0.0", "1.5", "1e-06",
// "inf".
func pyFloat(v float64) string {
	switch {
	case math.IsInf(v, 1):
		return "+Inf"
	case math.IsInf(v, -1):
		return "-Inf"
	case math.IsNaN(v):
		return "NaN"
	}
	// Python's repr: positional below 1e16 and down to 1e-4, else
	// scientific with a two-digit exponent at least.
	if a := math.Abs(v); a == 0 || (a >= 1e-4 && a < 1e16) {
		s := strconv.FormatFloat(v, 'f', -1, 64)
		if !strings.Contains(s, ".") {
			s += ".0"
		}
		return s
	}
	return strconv.FormatFloat(v, 'e', -1, 64)
}

func escapeHelp(s string) string {
	return strings.NewReplacer(`\`, `\\`, "\n", `\n`).Replace(s)
}

func escapeLabel(s string) string {
	return strings.NewReplacer(`\`, `\\`, "\n", `\n`, `"`, `\"`).Replace(s)
}

// writeMetrics writes the /metrics page of a server.
func (s *Server) writeMetrics(w io.Writer, snap snapshot) error {
	x := &expositionWriter{
		w:      w,
		labels: fmt.Sprintf(`model_name="%s",engine="0"`, escapeLabel(s.cfg.Model)),
		create: float64(s.started.UnixNano()) / 1e9,
	}
	x.gauge("vllm:num_requests_running", "Number of requests in model execution batches.", float64(snap.running))
	x.gauge("vllm:num_requests_waiting", "Number of requests waiting to be processed.", float64(snap.waiting))
	x.gauge("vllm:kv_cache_usage_perc", "KV-cache usage. 1 means 100 percent usage.", snap.usage)
	x.counter("vllm:prefix_cache_queries", "Prefix cache queries, in terms of number of queried tokens.", snap.c.prefixQueries)
	x.counter("vllm:prefix_cache_hits", "Prefix cache hits, in terms of number of cached tokens.", snap.c.prefixHits)
	x.counter("vllm:external_prefix_cache_queries", "External prefix cache queries from KV connector cross-instance cache sharing, in terms of number of queried tokens.", snap.c.extQueries)
	x.counter("vllm:external_prefix_cache_hits", "External prefix cache hits from KV connector cross-instance cache sharing, in terms of number of cached tokens.", snap.c.extHits)
	x.counter("vllm:prompt_tokens", "Number of prefill tokens processed.", snap.c.promptTokens)
	x.labelled("vllm:prompt_tokens_by_source", "Number of prompt tokens by source.", "source", []string{"local_compute", "local_cache_hit", "external_kv_transfer"},
		[]float64{snap.c.srcCompute, snap.c.srcLocal, snap.c.srcExternal})
	x.counter("vllm:prompt_tokens_cached", "Number of cached prompt tokens (local + external).", snap.c.promptCached)
	if s.cfg.CacheSourceMetrics {
		x.labelled("vllm:prompt_tokens_cached_by_source", "Number of cached prompt tokens by source.", "source", []string{"device", "host", "p2p"},
			[]float64{snap.c.cachedDevice, snap.c.cachedHost, snap.c.cachedP2P})
	}
	x.counter("vllm:generation_tokens", "Number of generation tokens processed.", snap.c.genTokens)
	x.histogram("vllm:time_to_first_token_seconds", "Histogram of time to first token in seconds.", snap.c.ttft)

	x.header("vllm:cache_config_info", "gauge", "Information of the LLMEngine CacheConfig")
	x.printf("vllm:cache_config_info{%s} 1.0\n", s.cacheConfigLabels())

	x.header("kvtier_simulated", "gauge", "1: this server is kvtier's simulator, not vLLM.")
	x.printf("kvtier_simulated{%s} 1.0\n", x.labels)
	writeLag(x, snap)
	if s.cfg.CPUBlocks > 0 {
		p := s.cfg.Profile
		x.header("kvtier_sim_host_store_gbps", "gauge", "GB/s of the modeled CPU offload's stores, device to host, beside its loads (PCIe is full duplex); assumed=\"true\" when no measurement gave the figure.")
		x.printf("kvtier_sim_host_store_gbps{%s,assumed=\"%t\"} %s\n", x.labels, p.Assumed != "", strconv.FormatFloat(p.HostStoreGBps, 'g', -1, 64))
	}
	return x.err
}

// writeLag writes how far the engine fell behind real time: over the
// server's life, and since each of the last scrapes (by number), so that
// a client reads the most it fell behind between two of its scrapes.
func writeLag(x *expositionWriter, snap snapshot) {
	x.header("kvtier_sim_lag_seconds", "gauge", "The most the engine's modeled schedule has fallen behind the wall clock since the server started (a step ending after the wall-clock time its modeled end maps to): how far this machine's load made the simulator fall behind real time.")
	x.printf("kvtier_sim_lag_seconds{%s} %s\n", x.labels, strconv.FormatFloat(snap.lag.Seconds(), 'g', -1, 64))
	x.header("kvtier_sim_scrape", "gauge", "The number of this scrape of /metrics: kvtier_sim_lag_since_seconds of a later scrape carries it.")
	x.printf("kvtier_sim_scrape{%s} %d\n", x.labels, snap.scrape)
	x.header("kvtier_sim_lag_since_seconds", "gauge", "The most the engine's modeled schedule fell behind the wall clock since the scrape numbered by the label scrape (the last few scrapes).")
	for _, m := range snap.lagMarks {
		x.printf("kvtier_sim_lag_since_seconds{%s,scrape=\"%d\"} %s\n", x.labels, m.seq, strconv.FormatFloat(m.most.Seconds(), 'g', -1, 64))
	}
}

// cacheConfigLabels is the label set of vllm:cache_config_info: a gauge
// of 1 whose labels are the cache config.
func (s *Server) cacheConfigLabels() string {
	info := [][2]string{
		{"block_size", strconv.Itoa(s.cfg.BlockSize)},
		{"cache_dtype", "auto"},
		{"calculate_kv_scales", "False"},
		{"cpu_offload_gb", "0"},
		{"enable_prefix_caching", "True"},
		{"gpu_memory_utilization", "0.9"},
		{"is_attention_free", "False"},
		{"num_cpu_blocks", noneOr(s.cfg.CPUBlocks)},
		{"num_gpu_blocks", strconv.Itoa(s.cfg.GPUBlocks)},
		{"num_gpu_blocks_override", "None"},
		{"prefix_caching_hash_algo", "sha256"},
		{"sliding_window", "None"},
		{"swap_space", "4"},
	}
	var lb strings.Builder
	for i, kv := range info {
		if i > 0 {
			lb.WriteByte(',')
		}
		fmt.Fprintf(&lb, `%s="%s"`, kv[0], escapeLabel(kv[1]))
	}
	return lb.String()
}

func noneOr(n int) string {
	if n <= 0 {
		return "None"
	}
	return strconv.Itoa(n)
}
