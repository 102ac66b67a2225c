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

// The run token's and the server's variables.
const (
	EnvEndpoint = "KVTIER_ENDPOINT"
)

// flagEnv are the variables that stand for a shared flag: a command
// reads one when it has that flag.
var flagEnv = []EnvVar{
	{Name: EnvEndpoint, Flag: "base-url", Meaning: "the server measured"},
	{Name: EnvToken, Flag: "token", Meaning: "the run token of pools and coordinators", Secret: true},
	{Name: "NCCL_IB_TC", Flag: "ib-tc", Meaning: "RoCE traffic class of the QPs, as NCCL reads it"},
	{Name: "NCCL_IB_SL", Flag: "ib-sl", Meaning: "InfiniBand service level of the QPs, as NCCL reads it"},
}

// libraryEnv are the native libraries' variables (Libraries): read by
// every command that writes a manifest (the machine's facts) or opens a
// backend, and by info.
var libraryEnv = []EnvVar{
	{Name: EnvLibCUDA, Meaning: "libcuda.so.1 to load instead of the usual sonames"},
	{Name: EnvLibCUBLAS, Meaning: "libcublas to load instead of the usual sonames and pip's wheels"},
	{Name: EnvLibIBVerbs, Meaning: "libibverbs.so.1 to load instead of the usual sonames"},
	{Name: EnvLibCUFile, Meaning: "libcufile.so to load instead of the usual sonames"},
	{Name: EnvLibNVML, Meaning: "libnvidia-ml.so.1 to load instead of the usual sonames"},
}

// BinaryEnv lists the variables every command may read (the flags' and
// the libraries'); a command's own are in its Command.Env. The test-only
// fault switches (KVTIER_TEST_*) are in none: a shipped binary has none.
func BinaryEnv() []EnvVar { return append(slices.Clone(flagEnv), libraryEnv...) }

// readsLibraries says whether the command of fs loads the native
// libraries.
func readsLibraries(fs *pflag.FlagSet) bool {
	if fs.Name() == "info" {
		return true
	}
	return (fs.Lookup("out") != nil || fs.Lookup("backend") != nil || fs.Lookup("mem") != nil) &&
		fs.Name() != "report" && fs.Name() != "bench2csv"
}

// EnvOf returns the variables the command of fs reads, own its own
// besides the shared ones.
func EnvOf(fs *pflag.FlagSet, own []EnvVar) []EnvVar {
	var out []EnvVar
	for _, e := range flagEnv {
		if fs.Lookup(e.Flag) != nil {
			out = append(out, e)
		}
	}
	if readsLibraries(fs) {
		out = append(out, libraryEnv...)
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
