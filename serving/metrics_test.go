package serving

import (
	"strings"
	"testing"
)

const metricsCurrent = `# HELP vllm:num_requests_running Number of requests in model execution batches.
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{engine="0",model_name="qwen"} 0.0
# HELP vllm:prefix_cache_queries_total Prefix cache queries, in terms of number of queried tokens.
# TYPE vllm:prefix_cache_queries_total counter
vllm:prefix_cache_queries_total{engine="0",model_name="qwen"} 8192.0
vllm:prefix_cache_queries_total{engine="1",model_name="qwen"} 100.0
vllm:prefix_cache_queries_total{engine="0",model_name="other"} 5.0
# HELP vllm:prefix_cache_hits_total Prefix cache hits, in terms of number of cached tokens.
# TYPE vllm:prefix_cache_hits_total counter
vllm:prefix_cache_hits_total{engine="0",model_name="qwen"} 4096.0
vllm:prefix_cache_hits_total{engine="1",model_name="qwen"} 16.0
vllm:prefix_cache_hits_total{engine="0",model_name="other"} 7.0
# HELP vllm:prefix_cache_hits_created Prefix cache hits, in terms of number of cached tokens.
# TYPE vllm:prefix_cache_hits_created gauge
vllm:prefix_cache_hits_created{engine="0",model_name="qwen"} 1.7e+09
# HELP vllm:external_prefix_cache_hits_total External prefix cache hits.
# TYPE vllm:external_prefix_cache_hits_total counter
vllm:external_prefix_cache_hits_total{engine="0",model_name="qwen"} 2048.0
# HELP vllm:external_prefix_cache_queries_total External prefix cache queries.
# TYPE vllm:external_prefix_cache_queries_total counter
vllm:external_prefix_cache_queries_total{engine="0",model_name="qwen"} 4096.0
# HELP vllm:cache_config_info Information of the LLMEngine CacheConfig
# TYPE vllm:cache_config_info gauge
vllm:cache_config_info{block_size="16",cache_dtype="auto",enable_prefix_caching="True",gpu_memory_utilization="0.9",num_cpu_blocks="None",num_gpu_blocks="36214"} 1.0
`

// vLLM 0.9: the gpu_ names, no external counters, no model match.
const metricsOld = `# TYPE vllm:gpu_prefix_cache_queries counter
vllm:gpu_prefix_cache_queries{model_name="m"} 64
# TYPE vllm:gpu_prefix_cache_hits counter
vllm:gpu_prefix_cache_hits{model_name="m"} 32
`

func TestParseMetrics(t *testing.T) {
	tests := []struct {
		name, in, model          string
		hits, queries, ext, extQ float64
		hitsFound, extFound      bool
		hitName                  string
		blockSize, gpuBlocks     int
	}{
		{"current, filter model", metricsCurrent, "qwen", 4112, 8292, 2048, 4096, true, true, "vllm:prefix_cache_hits_total", 16, 36214},
		{"current, unknown model sums all", metricsCurrent, "nope", 4119, 8297, 2048, 4096, true, true, "vllm:prefix_cache_hits_total", 16, 36214},
		{"current, no model sums all", metricsCurrent, "", 4119, 8297, 2048, 4096, true, true, "vllm:prefix_cache_hits_total", 16, 36214},
		{"old names", metricsOld, "x", 32, 64, 0, 0, true, false, "vllm:gpu_prefix_cache_hits", 0, 0},
		{"empty", "", "m", 0, 0, 0, 0, false, false, "", 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := ParseMetrics(strings.NewReader(tt.in), tt.model)
			if err != nil {
				t.Fatal(err)
			}
			if s.Hits.Value != tt.hits || s.Queries.Value != tt.queries || s.ExtHits.Value != tt.ext || s.ExtQueries.Value != tt.extQ {
				t.Errorf("hits %g queries %g ext %g extQ %g, want %g %g %g %g", s.Hits.Value, s.Queries.Value, s.ExtHits.Value, s.ExtQueries.Value, tt.hits, tt.queries, tt.ext, tt.extQ)
			}
			if s.Hits.Found != tt.hitsFound || s.ExtHits.Found != tt.extFound || s.Hits.Name != tt.hitName {
				t.Errorf("found hits %v (%s) ext %v", s.Hits.Found, s.Hits.Name, s.ExtHits.Found)
			}
			if s.BlockSize() != tt.blockSize || s.GPUBlocks() != tt.gpuBlocks {
				t.Errorf("block size %d gpu blocks %d, want %d %d", s.BlockSize(), s.GPUBlocks(), tt.blockSize, tt.gpuBlocks)
			}
		})
	}
}

func TestParseMetricsPrefersCurrentName(t *testing.T) {
	// vLLM 0.10 exposed both names with the same value: count it once.
	in := "# TYPE vllm:gpu_prefix_cache_hits_total counter\nvllm:gpu_prefix_cache_hits_total 10\n" +
		"# TYPE vllm:prefix_cache_hits_total counter\nvllm:prefix_cache_hits_total 10\n"
	s, err := ParseMetrics(strings.NewReader(in), "")
	if err != nil {
		t.Fatal(err)
	}
	if s.Hits.Value != 10 || s.Hits.Name != "vllm:prefix_cache_hits_total" {
		t.Errorf("hits = %g from %s", s.Hits.Value, s.Hits.Name)
	}
}

// A malformed exposition, or a counter kvtier reads holding what no
// counter can, is an error naming it: deltas of NaN verify nothing.
func TestParseMetricsError(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"vllm:prefix_cache_hits_total{ 3\n", "parsing /metrics"},
		{"vllm:prefix_cache_hits_total NaN\n", "vllm:prefix_cache_hits_total is NaN"},
		{"vllm:prefix_cache_queries_total +Inf\n", "vllm:prefix_cache_queries_total is +Inf"},
		{"vllm:prompt_tokens_total -7\n", "vllm:prompt_tokens_total is -7"},
		{"vllm:external_prefix_cache_hits_total 1e300\n", "is 1e+300"},
		{`vllm:prompt_tokens_by_source_total{source="local_compute"} NaN` + "\n", "labelled local_compute is NaN"},
		{`vllm:prompt_tokens_cached_by_source_total{source="host"} -1` + "\n", "labelled host is -1"},
		{"kvtier_sim_lag_seconds NaN\n", "kvtier_sim_lag_seconds is NaN"},
	} {
		if _, err := ParseMetrics(strings.NewReader(tc.in), ""); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want one saying %q", tc.in, err, tc.want)
		}
	}
	// A counter kvtier does not read may hold anything.
	if _, err := ParseMetrics(strings.NewReader("vllm:kv_cache_usage_perc NaN\nvllm:prefix_cache_hits_total 3\n"), ""); err != nil {
		t.Errorf("a NaN gauge kvtier does not read: %v", err)
	}
}

func FuzzParseMetrics(f *testing.F) {
	f.Add(metricsCurrent, "qwen")
	f.Add(metricsOld, "m")
	f.Add("vllm:prefix_cache_hits_total 1e3\n", "")
	f.Add("# TYPE x counter\nx{a=\"b\"} NaN\n", "b")
	f.Add("{\"vllm:prefix_cache_hits_total\",model_name=\"m\"} 4\n", "m")
	f.Fuzz(func(t *testing.T, in, model string) {
		s, err := ParseMetrics(strings.NewReader(in), model)
		if err != nil {
			return
		}
		if s.BlockSize() < 0 || s.GPUBlocks() < 0 {
			t.Fatalf("negative config: %+v", s.CacheConfig)
		}
		_ = Sub(s, s)
	})
}

func TestBlockSizeOr(t *testing.T) {
	t.Parallel()
	withConfig := Snapshot{CacheConfig: map[string]string{"block_size": "64"}}
	for _, tc := range []struct {
		snap   Snapshot
		given  int
		want   int
		source string
	}{
		{withConfig, 32, 32, "--block-size"},
		{withConfig, 0, 64, "vllm:cache_config_info"},
		{Snapshot{}, 0, 16, "assumed (vLLM default; vllm:cache_config_info missing)"},
	} {
		if n, src := tc.snap.BlockSizeOr(tc.given); n != tc.want || src != tc.source {
			t.Errorf("given %d: %d from %q, want %d from %q", tc.given, n, src, tc.want, tc.source)
		}
	}
}

// SGLang's counters read as hits and queries; a labelled counter with no
// series yet (no hit so far) is there, at 0.
func TestParseMetricsSGLang(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		in          string
		hits, total float64
	}{
		{"# HELP sglang:cached_tokens_total Number of cached prompt tokens.\n# TYPE sglang:cached_tokens_total counter\n" +
			"# TYPE sglang:prompt_tokens_total counter\nsglang:prompt_tokens_total{model_name=\"m\"} 4096\n", 0, 4096},
		{"# TYPE sglang:cached_tokens_total counter\nsglang:cached_tokens_total{model_name=\"m\",cache_source=\"device\"} 1000\n" +
			"sglang:cached_tokens_total{model_name=\"m\",cache_source=\"host\"} 24\n" +
			"# TYPE sglang:prompt_tokens_total counter\nsglang:prompt_tokens_total{model_name=\"m\"} 2048\n", 1024, 2048},
	} {
		s, err := ParseMetrics(strings.NewReader(tt.in), "m")
		if err != nil {
			t.Fatal(err)
		}
		if !s.Hits.Found || s.Hits.Value != tt.hits || s.Queries.Value != tt.total || s.Prompt.Value != tt.total {
			t.Errorf("hits %+v, queries %+v, prompt %+v", s.Hits, s.Queries, s.Prompt)
		}
	}
}
