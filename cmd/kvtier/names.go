package main

import (
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/spf13/pflag"

	"github.com/kvtier/kvtier/cli"
	"github.com/kvtier/kvtier/harness/probe"
	"github.com/kvtier/kvtier/tiers/tierspec"
)

// flagChanged reports whether the flag called name was given on the
// command line, under its name or under a deprecated alias of it (see
// alias): pflag's Changed sees only the name given.
func flagChanged(fs *pflag.FlagSet, name string) bool {
	found := fs.Changed(name)
	fs.Visit(func(f *pflag.Flag) {
		if names := f.Annotations[aliasOf]; len(names) == 1 && names[0] == name {
			found = true
		}
	})
	return found
}

// probeTier returns the probe's name of the tier called name, any name
// the tier goes by (the sweep's hbm, host, recompute; dram), or an error
// naming the tiers the probe measures.
func probeTier(name string) (string, error) {
	if d, ok := tierspec.Lookup(name); ok && d.Probe != "" {
		return d.Probe, nil
	}
	return "", fmt.Errorf("unknown tier %q (the probe measures %s)", name, probeTierUsage())
}

// probeTierUsage names the probe's tiers in the probe's order, each with
// its other names: "miss (recompute), gpu (hbm), ...".
func probeTierUsage() string {
	var out []string
	for _, p := range probe.Tiers {
		d, _ := tierspec.Lookup(p)
		names := slices.DeleteFunc(d.Names(), func(n string) bool { return n == p })
		if len(names) == 0 {
			out = append(out, p)
			continue
		}
		out = append(out, p+" ("+strings.Join(names, ", ")+")")
	}
	return strings.Join(out, ", ")
}

// addBaseURL adds --base-url, the server a client command sends to, with
// --endpoint as its deprecated alias: vllm bench serve calls the server
// --base-url and the API path (/v1/completions) --endpoint.
func addBaseURL(fs *pflag.FlagSet, p *string, usage string) {
	fs.StringVar(p, "base-url", os.Getenv(cli.EnvEndpoint), usage)
	alias(fs, "endpoint", "base-url")
}
