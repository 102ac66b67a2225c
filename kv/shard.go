package kv

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/kvtier/kvtier/option"
)

// KVDTypes are the KV cache dtypes Shard accepts, by bytes per element
// (vLLM's --kv-cache-dtype: fp8 is e4m3 or e5m2, one byte either way).
var KVDTypes = map[string]int{"bf16": 2, "fp16": 2, "fp8": 1}

// Shard returns g as each GPU of a tensor-parallel group of tp holds its
// KV cache, stored as kvDType ("" keeps the model's dtype). tp must
// divide the KV heads: a GPU holds whole heads. An MLA latent is not
// split (every rank holds it whole), so tp leaves its bytes alone. Errors
// name the option at fault: "tp" or "kv-dtype".
func (g Geometry) Shard(tp int, kvDType string) (Geometry, error) {
	if err := option.Range("tp", tp, 1, MaxHeads, "GPUs"); err != nil {
		return Geometry{}, err
	}
	if !g.MLA() && g.KVHeads%tp != 0 {
		return Geometry{}, option.Errorf("tp", "%s has %d KV heads, which do not divide by %d (each GPU holds whole heads)", g.Model, g.KVHeads, tp)
	}
	g.TP = tp
	if kvDType != "" {
		n, ok := KVDTypes[strings.ToLower(kvDType)]
		if !ok {
			return Geometry{}, option.Errorf("kv-dtype", "unknown KV dtype %q (known: %s)", kvDType, strings.Join(slices.Sorted(maps.Keys(KVDTypes)), ", "))
		}
		g.KVDType, g.KVDTypeBytes = strings.ToLower(kvDType), n
	}
	return g, g.Validate()
}

// KVHeadsPerGPU is the KV heads one GPU holds: KVHeads/TP.
func (g Geometry) KVHeadsPerGPU() int { return g.KVHeads / max(g.TP, 1) }

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
