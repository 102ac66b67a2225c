package sweep

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/kvtier/kvtier/harness"
	"github.com/kvtier/kvtier/option"
	"github.com/kvtier/kvtier/results"
	"github.com/kvtier/kvtier/tiers"
	"github.com/kvtier/kvtier/tiers/tierspec"
)

// ValidateAll reports, as an option.Error naming gpu, a selection of
// tiers that `--gpu all` cannot run (every tier is selected when none is
// named).
func (o *Options) ValidateAll() error {
	all := tierspec.AllGPUNames() // their loads share a node's PCIe switches and host memory bandwidth
	var bad []string
	for _, t := range o.selectedTiers() {
		if !slices.Contains(all, t) {
			bad = append(bad, t)
		}
	}
	if len(bad) > 0 {
		return option.Errorf("gpu", "all runs only the tiers %s, not %s (give --tiers %s)", // --gpu, not a tier
			strings.Join(all, ","), strings.Join(bad, ","), strings.Join(all, ","))
	}
	return nil
}

// gpuOrdinal is a backend on one GPU (tiers.CUDABackend).
type gpuOrdinal interface{ GPU() int }

// RunAll runs the sweep as Run does, on every GPU at once: bs holds one
// backend per GPU of the node, in ordinal order. Each configuration is
// set up on every GPU, and each sample of a prefix starts on all of them
// together (harness.Sampler.MeasureGroup): per rep, one row per GPU (its
// ordinal in the gpu column) and one aggregate row (gpu "all": the
// slowest GPU's seconds, the sum of the bytes). opts must have passed
// Validate and ValidateAll.
func RunAll(ctx context.Context, opts Options, bs []tiers.Backend, out *harness.Output, log io.Writer) error {
	if len(bs) == 0 {
		return errors.New("sweep: no GPU to run on")
	}
	settings := opts.Settings()
	settings["backend_used"] = bs[0].Name()
	var devs []string
	for _, b := range bs {
		devs = append(devs, b.Device())
	}
	settings["device"] = strings.Join(devs, "; ")
	settings[results.ColGPU] = results.AllGPUs
	settings["gpus"] = strconv.Itoa(len(bs))
	return run(ctx, opts, settings, &sweeper{b: bs[0], all: bs}, out, log)
}

// group measures the configuration c (on the first GPU) of variant v on
// every GPU at once.
func (s *sweeper) group(ctx context.Context, c Config, v tiers.Variant, fit []int) error {
	g := grouped{s: s, cs: []Config{c}}
	defer func() {
		for _, o := range g.cs[1:] {
			o.Tier.Close()
		}
	}()
	for _, b := range s.all[1:] {
		g.cs = append(g.cs, s.newConfig(b, c.Spec, c.Layout, c.Copy, c.Direction, v))
	}
	blocks := c.Geom.Blocks(fit[len(fit)-1])
	s.waitSetup(c, fit)
	for i, o := range g.cs {
		if err := o.Tier.Setup(ctx, blocks); err != nil {
			return s.failSetup(ctx, g.Case, fit, fmt.Errorf("gpu %d: %w", i, err))
		}
	}
	harness.ProgressOf(s.log).Wait("")
	return s.prefixes(ctx, c, fit, g)
}

// grouped measures a configuration on every GPU at once: cs holds one
// Config per GPU.
type grouped struct {
	s  *sweeper
	cs []Config
}

// Case is the aggregate case of p.
func (g grouped) Case(p tiers.Prefix) harness.Case { return allCase(g.cs[0], len(g.cs), p) }

func (g grouped) Measure(ctx context.Context, p tiers.Prefix) (harness.Result, error) {
	cs := make([]harness.Case, len(g.cs))
	for i, c := range g.cs {
		cs[i] = c.Case(p)
		cs[i].Label += " gpu" + strconv.Itoa(i)
	}
	return g.s.sampler.MeasureGroup(ctx, cs, g.Case(p))
}

// skipCase is the case whose row a skipped row of c at p takes: the
// aggregate's under --gpu all.
func (s *sweeper) skipCase(c Config, p tiers.Prefix) harness.Case {
	if s.all != nil {
		return allCase(c, len(s.all), p)
	}
	return c.Case(p)
}

// allCase turns the case of c at p into the aggregate of n GPUs: gpu
// "all", n times the bytes, no link limit (the GPUs' links share
// switches), nothing of its own to run.
func allCase(c Config, n int, p tiers.Prefix) harness.Case {
	hc := c.Case(p)
	hc.Label += " all"
	hc.Row.Set(results.ColGPU, results.AllGPUs)
	hc.Row.Set("device", fmt.Sprintf("%d GPUs", n))
	hc.Row.Bytes *= int64(n)
	delete(hc.Row.Extra, "link_gb_per_s")
	hc.Fetch, hc.Before, hc.Scrub, hc.Derive = nil, nil, nil, nil
	return hc
}
