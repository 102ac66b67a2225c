package probe

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/kvtier/kvtier/serving"
	"regexp"
	"strconv"
)

// An Offload is what the probe knows of a server's CPU offload store: its
// capacity and the unit it stores and loads prefixes in, and where each
// figure came from.
type Offload struct {
	Tokens       int    // capacity in tokens; 0 unknown
	TokensSource string // "--cpu-capacity", "vllm:cache_config_info num_cpu_blocks", "GET /server_info ...", or why unknown
	Grain        int    // tokens per offload unit (>= the GPU block)
	GrainSource  string
}

// serverInfoRE finds the offloading connector's settings in the
// configuration GET /server_info dumps (vLLM with VLLM_SERVER_DEV_MODE=1),
// whatever its format (JSON or Python repr).
var serverInfoRE = regexp.MustCompile(`["']?(num_cpu_blocks|cpu_bytes_to_use|block_size|kv_offloading_size)["']?\s*[:=]\s*([0-9.]+)`)

// offloadFromServerInfo reads the offload store's capacity and block out
// of a /server_info body: the kv_transfer_config's extra config
// (num_cpu_blocks with its block_size, or cpu_bytes_to_use) or
// kv_offloading_size (GiB). bytesPerToken converts bytes to tokens (0:
// unknown, so bytes cannot be converted).
func offloadFromServerInfo(body string, gpuBlock int, bytesPerToken int64) (tokens, grain int, what string) {
	start := regexp.MustCompile(`kv_transfer_config|kv_offloading`).FindStringIndex(body)
	if start == nil {
		return 0, 0, ""
	}
	vals := map[string]float64{}
	for _, m := range serverInfoRE.FindAllStringSubmatch(body[start[0]:], -1) {
		if _, seen := vals[m[1]]; !seen {
			vals[m[1]], _ = strconv.ParseFloat(m[2], 64)
		}
	}
	grain = max(serverCount(vals["block_size"]), gpuBlock)
	switch {
	case serverCount(vals["num_cpu_blocks"]*float64(grain)) > 0:
		return serverCount(vals["num_cpu_blocks"] * float64(grain)), grain, "num_cpu_blocks"
	case bytesPerToken > 0 && serverCount(vals["cpu_bytes_to_use"]/float64(bytesPerToken)) > 0:
		return serverCount(vals["cpu_bytes_to_use"] / float64(bytesPerToken)), grain, "cpu_bytes_to_use"
	case bytesPerToken > 0 && serverCount(vals["kv_offloading_size"]*(1<<30)/float64(bytesPerToken)) > 0:
		return serverCount(vals["kv_offloading_size"] * (1 << 30) / float64(bytesPerToken)), grain, "kv_offloading_size"
	}
	return 0, grain, ""
}

// maxServerCount bounds a count a server reports (blocks, tokens): past
// it the figure is nonsense and taken as unknown.
const maxServerCount = 1 << 40

// serverCount is a count a server reported, 0 (unknown) when it is not a
// positive number up to maxServerCount.
func serverCount(v float64) int {
	if !(v > 0 && v <= maxServerCount) {
		return 0
	}
	return int(v)
}

// discoverOffload fills what the flags left of the CPU store: capacity
// from cache_config_info's num_cpu_blocks or /server_info, the unit from
// /server_info, else the GPU block.
func (p *Prober) discoverOffload(ctx context.Context, snap serving.Snapshot) Offload {
	o := Offload{Tokens: p.cfg.CPUCapacity, Grain: p.cfg.OffloadBlock}
	if o.Tokens > 0 {
		o.TokensSource = "--cpu-capacity"
	}
	if o.Grain > 0 {
		o.GrainSource = "--offload-block"
	}
	bs := p.info.BlockSize
	if o.Tokens == 0 && snap.CPUBlocks() > 0 {
		o.Tokens, o.TokensSource = snap.CPUBlocks()*bs, "vllm:cache_config_info num_cpu_blocks"
	}
	if o.Tokens == 0 || o.Grain == 0 {
		var raw json.RawMessage
		if _, err := p.c.GetJSON(ctx, "/server_info", &raw); err == nil {
			var perToken int64
			if p.cfg.BlockBytes != nil {
				perToken = p.cfg.BlockBytes(p.info.Model, bs) / int64(bs)
			}
			t, g, what := offloadFromServerInfo(string(raw), bs, perToken)
			if o.Tokens == 0 && t > 0 {
				o.Tokens, o.TokensSource = t, "GET /server_info "+what
			}
			if o.Grain == 0 && g > bs {
				o.Grain, o.GrainSource = g, "GET /server_info block_size"
			}
		}
	}
	if o.Tokens == 0 {
		o.TokensSource = "unknown: no --cpu-capacity, no num_cpu_blocks in vllm:cache_config_info, no connector config in GET /server_info"
	}
	if o.Grain == 0 {
		o.Grain, o.GrainSource = bs, "the GPU block (no --offload-block, no connector block_size exposed)"
	}
	return o
}

// maxFloodTokens bounds the eviction flood: a GPU pool larger than any
// server's (about a day of prefill) is a figure not to act on.
const maxFloodTokens = 1 << 30

// floodTokens sizes the eviction flood for a prefix of l tokens: enough
// to push it out of the GPU pool (the pool times the margin), but never so
// much that the CPU store, when its size is known, must drop the prefix
// too. It fails when no flood does both.
func (p *Prober) floodTokens(l int) (int, error) {
	gpu := p.info.GPUBlocks * p.info.BlockSize
	want := int(float64(gpu) * p.cfg.EvictMargin)
	if gpu < 0 || float64(gpu)*p.cfg.EvictMargin > maxFloodTokens {
		return 0, fmt.Errorf("the eviction flood for the GPU pool the server reports (%d blocks of %d tokens) would exceed %d tokens", p.info.GPUBlocks, p.info.BlockSize, maxFloodTokens)
	}
	cpu := p.info.Offload.Tokens
	if cpu <= 0 {
		return want, nil
	}
	// Every filler block is written to the CPU store too; LRU keeps the
	// prefix while prefix + flood fit.
	room := cpu - l - p.info.Offload.Grain
	if room <= gpu {
		return 0, fmt.Errorf("the CPU store (%d tokens, %s) cannot keep a %d-token prefix while %d filler tokens evict it from the GPU pool", cpu, p.info.Offload.TokensSource, l, gpu+1)
	}
	return min(want, room), nil
}
