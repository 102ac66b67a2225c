package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/pflag"

	"github.com/kvtier/kvtier/kv"
	"github.com/kvtier/kvtier/units"
)

// geometryOptions are the flags of kvtier geometry.
type geometryOptions struct {
	model, config string
	blockSize     int
}

// Validate resolves the geometry, reporting every problem at once.
func (o geometryOptions) Validate() (kv.Geometry, error) {
	var errs []error
	var g kv.Geometry
	var err error
	switch {
	case o.model != "" && o.config != "":
		errs = append(errs, errors.New("--model-config: give --model or --model-config, not both"))
	case o.config != "":
		if g, err = kv.ParseConfig(o.config); err != nil {
			errs = append(errs, fmt.Errorf("--model-config: %w", err))
		}
	default:
		name := o.model
		if name == "" {
			name = kv.DefaultModel
		}
		if g, err = kv.LookupModel(name); err != nil {
			errs = append(errs, fmt.Errorf("--model: %w", err))
		}
	}
	if o.blockSize <= 0 {
		errs = append(errs, fmt.Errorf("--block-size: must be positive, got %d", o.blockSize))
	} else if g.Layers > 0 {
		g.BlockTokens = o.blockSize
		if err := g.Validate(); err != nil {
			errs = append(errs, fmt.Errorf("--model: %w", err))
		}
	}
	return g, errors.Join(errs...)
}

// runGeometry prints the KV geometry of a model.
func runGeometry(ctx context.Context, stdout, stderr io.Writer, args []string) int {
	fs := pflag.NewFlagSet("geometry", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	var o geometryOptions
	fs.StringVar(&o.model, "model", "", fmt.Sprintf("model preset (%s; default %s)", joinNames(kv.ModelNames()), kv.DefaultModel))
	fs.StringVar(&o.config, "model-config", "", "Hugging Face config.json of the model (or its directory)")
	fs.IntVar(&o.blockSize, "block-size", kv.DefaultBlockTokens, "tokens per KV block")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: kvtier geometry [--model NAME | --model-config PATH] [--block-size N]")
		fs.PrintDefaults()
	}
	if code, ok := parseNoArgs(fs, args, stderr); !ok {
		return code
	}
	g, err := o.Validate()
	if err != nil {
		return usageErr(stderr, "geometry", err)
	}
	printGeometry(stdout, g)
	return exitOK
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

func joinNames(names []string) string {
	s := ""
	for i, n := range names {
		if i > 0 {
			s += ", "
		}
		s += n
	}
	return s
}
