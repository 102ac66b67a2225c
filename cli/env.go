package cli

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/pflag"
)

// An EnvVar is an environment variable the kvtier binary reads. Each is
// listed in the -h of the commands that read it and recorded, when set,
// in the manifest of their results. Where it stands for a flag, the flag
// wins. (scripts/bench.sh and go test ./bench read others: a command's
// ScriptEnv, and docs/gpu-node.md.)
type EnvVar struct {
	Name    string
	Flag    string // the flag it stands for ("" none)
	Meaning string
	Secret  bool // its value never reaches a manifest
}

// BinaryEnv lists the variables every command may read: those of every
// registered flag group; a command's own are in its Command.Env. The
// test-only fault switches (KVTIER_TEST_*) are in none: a shipped binary
// has none.
func BinaryEnv() []EnvVar {
	var out []EnvVar
	for _, g := range groups.All() {
		for _, e := range g.Env {
			if !slices.ContainsFunc(out, func(o EnvVar) bool { return o.Name == e.Name }) {
				out = append(out, e)
			}
		}
	}
	return out
}

// EnvOf returns the variables the command of fs reads, own its own
// besides those of the flag groups it binds: a variable that stands for
// a flag where fs has the flag, a group's others where the command binds
// the group or one of its ReadBy.
func EnvOf(fs *pflag.FlagSet, own []EnvVar) []EnvVar {
	names := boundNames(fs)
	var out []EnvVar
	for _, g := range groups.All() {
		for _, e := range g.Env {
			if e.Flag != "" && fs.Lookup(e.Flag) != nil || e.Flag == "" && g.readBy(names) {
				out = append(out, e)
			}
		}
	}
	return append(out, own...)
}

// PrintEnv writes the Environment section of a command's -h: each
// variable of vars with what it means and the flag that wins over it;
// variables of the same meaning share a line.
func PrintEnv(w io.Writer, vars []EnvVar) {
	if len(vars) == 0 {
		return
	}
	fmt.Fprintln(w, "\nEnvironment (recorded in the manifest when set; secrets redacted):")
	for i := 0; i < len(vars); {
		j := i + 1
		for j < len(vars) && vars[j].Meaning == vars[i].Meaning && vars[j].Flag == vars[i].Flag {
			j++
		}
		names := make([]string, 0, j-i)
		for _, e := range vars[i:j] {
			names = append(names, e.Name)
		}
		what := vars[i].Meaning
		if f := vars[i].Flag; strings.Contains(f, ",") {
			what += " (--" + f + " win over them)"
		} else if f != "" {
			what += " (--" + f + " wins over it)"
		}
		if list := strings.Join(names, ", "); len(list) <= 18 {
			fmt.Fprintf(w, "  %-18s %s\n", list, what)
		} else {
			fmt.Fprintf(w, "  %s:\n  %-18s %s\n", list, "", what)
		}
		i = j
	}
}

// ReadEnv returns the variables of vars that getenv says are set, by
// name, for a manifest; a secret's value is "<redacted>".
func ReadEnv(getenv func(string) string, vars []EnvVar) map[string]string {
	out := map[string]string{}
	for _, e := range vars {
		v := getenv(e.Name)
		if v == "" {
			continue
		}
		if e.Secret {
			v = "<redacted>"
		}
		out[e.Name] = v
	}
	return out
}

// env returns the variables the command whose output this is reads, own
// its own besides the shared ones.
func (f *OutputFlags) env(own []EnvVar) []EnvVar {
	if f.fs == nil {
		return append(BinaryEnv(), own...)
	}
	return EnvOf(f.fs, own)
}
