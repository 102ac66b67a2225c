package main

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/pflag"

	"github.com/kvtier/kvtier/cli"
	"github.com/kvtier/kvtier/kv"
	"github.com/kvtier/kvtier/units"
)

func init() {
	cli.Register(&cli.Command{Name: "geometry", Order: 20, Run: cli.Bound(runGeometry),
		Summary: "KV geometry of a model: bytes per token and block, chunks per layout",
		Usage:   "Usage: kvtier geometry [--model NAME | --model-config PATH] [--block-size N] [--tp N] [--kv-dtype bf16|fp16|fp8|fp8_e4m3|fp8_e5m2|auto]"})
}

// geometryFlags are the flags of kvtier geometry: the model's.
type geometryFlags struct{ cli.ModelFlags }

// Bind adds the flags to fs.
func (f *geometryFlags) Bind(fs *pflag.FlagSet, _ *cli.Call) { f.Add(fs) }

// Resolve is the geometry the flags name.
func (f *geometryFlags) Resolve() (kv.Geometry, error) { return f.Geometry() }

// runGeometry prints the KV geometry of a model.
func runGeometry(ctx context.Context, c *cli.Call, _ *geometryFlags, g kv.Geometry) int {
	printGeometry(c.Stdout, g)
	return cli.ExitOK
}

func printGeometry(w io.Writer, g kv.Geometry) {
	fmt.Fprintf(w, "model: %s\n", g.Model)
	if g.MLA() {
		fmt.Fprintf(w, "  %d layers, MLA latent %d + rope %d, %s (%d bytes)\n", g.Layers, g.KVLoraRank, g.QKRopeHeadDim, g.DType, g.DTypeBytes)
	} else {
		fmt.Fprintf(w, "  %d layers, %d heads, %d KV heads, head_dim %d, hidden %d, %s (%d bytes)\n",
			g.Layers, g.Heads, g.KVHeads, g.HeadDim, g.Hidden, g.DType, g.DTypeBytes)
	}
	switch {
	case g.Experts > 0:
		fmt.Fprintf(w, "  MoE: %d experts, top-%d, moe_intermediate %d", g.Experts, g.ExpertsPerToken, g.MoEIntermediate)
		if g.SharedExperts > 0 {
			fmt.Fprintf(w, ", %d shared (%d)", g.SharedExperts, g.SharedIntermediate)
		}
		if g.DenseLayers > 0 {
			fmt.Fprintf(w, ", %d dense layers", g.DenseLayers)
		}
		fmt.Fprintln(w)
	default:
		fmt.Fprintf(w, "  dense MLP: intermediate %d\n", g.Intermediate)
	}
	fmt.Fprintf(w, "KV cache:\n")
	if p := g.Parallel(); p != "" {
		fmt.Fprintf(w, "  per GPU (%s): %d of %d KV heads", p, g.KVHeadsPerGPU(), g.KVHeads)
		if r := g.KVHeadReplicas(); r > 1 && !g.MLA() {
			fmt.Fprintf(w, " (each replicated on %d GPUs)", r)
		}
		fmt.Fprintf(w, ", %s (%d bytes)\n", g.KVDTypeName(), g.KVElemBytes())
	}
	fmt.Fprintf(w, "  %d bytes/token/layer\n", g.BytesPerTokenLayer())
	fmt.Fprintf(w, "  %d bytes/token (%s)\n", g.BytesPerToken(), units.FormatBytes(g.BytesPerToken()))
	fmt.Fprintf(w, "  %d bytes/block of %d tokens (%s)\n", g.BlockBytes(), g.BlockTokens, units.FormatBytes(g.BlockBytes()))
	fmt.Fprintf(w, "Layouts:\n")
	for _, l := range kv.Layouts() {
		fmt.Fprintf(w, "  %s: %d chunks of %d bytes per block\n", l, g.ChunksPerBlock(l), g.ChunkBytes(l))
	}
	fmt.Fprintf(w, "Prefixes:\n")
	fmt.Fprintf(w, "  %8s %8s %14s %12s %14s\n", "tokens", "blocks", "bytes", "size", "prefill GFLOP")
	for _, tok := range []int{1 << 10, 4 << 10, 16 << 10, 64 << 10} {
		b := g.Blocks(tok)
		bytes := int64(b) * g.BlockBytes()
		fmt.Fprintf(w, "  %8s %8d %14d %12s %14.0f\n", units.FormatTokens(tok), b, bytes, units.FormatBytes(bytes), kv.PrefillFLOPs(g, tok)/1e9)
	}
}
