package kv

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/kvtier/kvtier/option"
)

// KVDTypes are the KV cache dtypes Shard accepts, by bytes per element,
// in kvtier's spellings and vLLM's --kv-cache-dtype ones (fp8 is e4m3 or
// e5m2, one byte either way; "auto" is the model's dtype, 0 here).
var KVDTypes = map[string]int{"bf16": 2, "fp16": 2, "fp8": 1, "fp8_e4m3": 1, "fp8_e5m2": 1, "auto": 0}

// Shard returns g as each GPU of a tensor-parallel group of tp holds its
// KV cache, stored as kvDType ("" or "auto" keeps the model's dtype).
// Heads are split as vLLM splits them: each GPU holds max(1,
// KVHeads/tp) of them, so tp must divide the KV heads or be a multiple
// of them (then each head is replicated on tp/KVHeads GPUs). An MLA
// latent is not split (every rank holds it whole), so tp leaves its
// bytes alone. Errors name the option at fault: "tp" or "kv-dtype".
func (g Geometry) Shard(tp int, kvDType string) (Geometry, error) {
	if err := option.Range("tp", tp, 1, MaxHeads, "GPUs"); err != nil {
		return Geometry{}, err
	}
	if !g.MLA() && g.KVHeads > 0 && g.KVHeads%tp != 0 && tp%g.KVHeads != 0 {
		return Geometry{}, option.Errorf("tp", "%s has %d KV heads: %d GPUs can neither split them (a divisor) nor replicate them (a multiple)",
			g.Model, g.KVHeads, tp)
	}
	g.TP = tp
	if kvDType != "" {
		name := strings.ToLower(kvDType)
		n, ok := KVDTypes[name]
		if !ok {
			return Geometry{}, option.Errorf("kv-dtype", "unknown KV dtype %q (known: %s)", kvDType, strings.Join(slices.Sorted(maps.Keys(KVDTypes)), ", "))
		}
		if n > 0 {
			g.KVDType, g.KVDTypeBytes = name, n
		}
	}
	return g, g.Validate()
}

// KVHeadsPerGPU is the KV heads one GPU holds: max(1, KVHeads/TP), as
// vLLM shards them.
func (g Geometry) KVHeadsPerGPU() int { return max(1, g.KVHeads/max(g.TP, 1)) }

// KVHeadReplicas is how many GPUs hold each KV head: TP/KVHeads where
// TP exceeds the KV heads, else 1.
func (g Geometry) KVHeadReplicas() int { return max(1, max(g.TP, 1)/max(g.KVHeads, 1)) }

// KVElemBytes is the width of one KV element: KVDTypeBytes, else
// DTypeBytes.
func (g Geometry) KVElemBytes() int {
	if g.KVDTypeBytes > 0 {
		return g.KVDTypeBytes
	}
	return g.DTypeBytes
}

// KVDTypeName is the KV cache's dtype: KVDType, else the model's.
func (g Geometry) KVDTypeName() string {
	if g.KVDType != "" {
		return g.KVDType
	}
	return g.DType
}

// Parallel describes the shard for a label or a manifest, e.g.
// "tp=2 kv=fp8"; "" for one GPU in the model's dtype.
func (g Geometry) Parallel() string {
	var parts []string
	if g.TP > 1 {
		parts = append(parts, fmt.Sprintf("tp=%d", g.TP))
	}
	if g.KVDType != "" {
		parts = append(parts, "kv="+g.KVDType)
	}
	return strings.Join(parts, " ")
}

// ShardSettings are a run's manifest settings of the shard: tp,
// kv_dtype, kv_heads_per_gpu and kv_head_replicas (GPUs holding each
// head).
func (g Geometry) ShardSettings() map[string]string {
	return map[string]string{
		"tp": strconv.Itoa(max(g.TP, 1)), "kv_dtype": g.KVDTypeName(),
		"kv_heads_per_gpu": strconv.Itoa(g.KVHeadsPerGPU()), "kv_head_replicas": strconv.Itoa(g.KVHeadReplicas()),
	}
}
