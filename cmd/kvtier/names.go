package main

import (
	"fmt"
	"os"
	"slices"

	"github.com/spf13/pflag"
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

// tierNames are the names one tier goes by: the device sweep's (kvtier
// sweep --tiers, the rows' tier column of sweep.csv), the HTTP probe's
// (kvtier probe --tiers, probe.csv) and other spellings users write. The
// probe's --tiers takes any of them.
var tierNames = []struct {
	sweep, probe string
	others       []string
}{
	{"hbm", "gpu", nil},
	{"host", "cpu", []string{"dram"}},
	{"remote", "remote", nil},
	{"disk", "", nil},
	{"recompute", "miss", nil},
}

// probeTier returns the probe's name of the tier called name (any of its
// names), or an error naming the tiers the probe measures.
func probeTier(name string) (string, error) {
	for _, t := range tierNames {
		if t.probe != "" && (t.sweep == name || t.probe == name || slices.Contains(t.others, name)) {
			return t.probe, nil
		}
	}
	return "", fmt.Errorf("unknown tier %q (the probe measures %s)", name, probeTierUsage)
}

// probeTierUsage names the probe's tiers in the probe's order, with the
// sweep's names beside them.
const probeTierUsage = "miss (recompute), gpu (hbm), cpu (host, dram), remote"

// addBaseURL adds --base-url, the server a client command sends to, with
// --endpoint as its deprecated alias: vllm bench serve calls the server
// --base-url and the API path (/v1/completions) --endpoint.
func addBaseURL(fs *pflag.FlagSet, p *string, usage string) {
	fs.StringVar(p, "base-url", os.Getenv("KVTIER_ENDPOINT"), usage)
	alias(fs, "endpoint", "base-url")
}
