// Package servingflag holds the flag group of the commands that send
// requests to an OpenAI/vLLM server (probe, interfere, replay, knee):
// the server measured, or an embedded kvtier sim in its place
// (ServerFlags, ServerGroup), and what those commands share about --sim's
// grids. It sits beside package serving, as the go command keeps
// AddBuildFlags beside its build; serving itself stays below the
// command line and the measuring core.
package servingflag

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/kvtier/kvtier/cli"
	"github.com/kvtier/kvtier/option"
	"github.com/kvtier/kvtier/serving"
	"github.com/kvtier/kvtier/units"
)

// EnvEndpoint stands for --base-url.
const EnvEndpoint = "KVTIER_ENDPOINT"

// ServerGroup is the server a client command measures: --base-url, --sim,
// --served-model-name, --idle-timeout and --max-timeouts.
var ServerGroup = cli.NewGroup(cli.FlagGroup{Name: "server", Heading: "Server", Order: 40,
	Env: []cli.EnvVar{{Name: EnvEndpoint, Flag: "base-url", Meaning: "the server measured"}}})

// ServerFlags choose the vLLM server a client command measures:
// --base-url (vllm bench serve's name; --endpoint before, which is the
// API path there) or --sim (an embedded kvtier sim), --served-model-name,
// --idle-timeout, --max-timeouts, --server-log and the removed
// --sim-time-scale.
type ServerFlags struct {
	FS          *pflag.FlagSet // the command's, to tell whether --base-url was given
	BaseURL     string
	LogPath     string // --server-log
	Model       string // --served-model-name
	UseSim      bool
	SimScale    float64
	Idle        time.Duration
	MaxTimeouts int
}

// Add adds the group's flags to fs; simUsage says what --sim measures.
func (f *ServerFlags) Add(fs *pflag.FlagSet, c *cli.Call, simUsage string) {
	f.FS = fs
	ServerGroup.Bind(fs, func(fs *pflag.FlagSet) {
		AddBaseURL(fs, c, &f.BaseURL, "base URL of the vLLM server measured, e.g. http://127.0.0.1:8000 (env "+EnvEndpoint+")")
		fs.BoolVar(&f.UseSim, "sim", false, simUsage)
		addSimTimeScale(fs, &f.SimScale)
		fs.StringVar(&f.Model, "served-model-name", "", "served model name (default: the first of GET /v1/models)")
		cli.Alias(fs, "model", "served-model-name")
		cli.AddIdleTimeout(fs, &f.Idle)
		AddMaxTimeouts(fs, &f.MaxTimeouts)
	})
	AddServerLog(fs, &f.LogPath)
}

// AddServerLog adds --server-log, the log file of the server measured,
// read for what its API does not report (docs/servers.md).
func AddServerLog(fs *pflag.FlagSet, p *string) {
	ServerGroup.Bind(fs, func(fs *pflag.FlagSet) {
		fs.StringVar(p, "server-log", "", "the measured server's log file, read as it grows for what its API does not report: Ollama's cache lines (start it with OLLAMA_DEBUG=1) verify its hits (verified_by=server_log) and its --parallel its slots")
	})
}

// OpenServerLog opens --server-log (path; "" none), adding a problem to
// errs: a log that cannot be read, or one given with --sim.
func OpenServerLog(errs *[]error, path string, sim bool) *serving.ServerLog {
	switch {
	case path == "":
		return nil
	case sim:
		*errs = append(*errs, option.Errorf("server-log", "the embedded sim writes no log: drop it with --sim"))
		return nil
	}
	l, err := serving.OpenServerLog(path)
	if err != nil {
		*errs = append(*errs, option.Wrap("server-log", err))
	}
	return l
}

// AddBaseURL adds --base-url, the server a client command sends to
// (default $KVTIER_ENDPOINT), with --endpoint as its deprecated alias:
// vllm bench serve calls the server --base-url and the API path
// (/v1/completions) --endpoint.
func AddBaseURL(fs *pflag.FlagSet, c *cli.Call, p *string, usage string) {
	ServerGroup.Bind(fs, func(fs *pflag.FlagSet) {
		fs.StringVar(p, "base-url", c.Getenv(EnvEndpoint), usage)
		cli.Alias(fs, "endpoint", "base-url")
	})
}

// AddMaxTimeouts adds --max-timeouts, the circuit breaker of every HTTP
// command: one name, one meaning.
func AddMaxTimeouts(fs *pflag.FlagSet, p *int) {
	ServerGroup.Bind(fs, func(fs *pflag.FlagSet) {
		fs.IntVar(p, "max-timeouts", serving.DefaultMaxTimeouts, "stop after this many consecutive requests to a server time out (a hung engine), leaving skipped rows for the rest (0: never)")
	})
}

// A SecondEndpoint is a server a command talks to besides --base-url: its
// flag, what it is (said when --sim makes it redundant) and its URL.
type SecondEndpoint struct{ Flag, Role, URL string }

// EndpointURL checks --base-url, --sim and a second server's flag
// together, adding each problem to errs, and returns the endpoint to
// use: none with --sim, whose URL is known once the sim runs.
func (f *ServerFlags) EndpointURL(errs *[]error, second SecondEndpoint) string {
	endpoint := strings.TrimSpace(f.BaseURL)
	switch {
	case f.UseSim:
		if cli.FlagChanged(f.FS, "base-url") {
			*errs = append(*errs, errors.New("--sim and --base-url exclude each other"))
		}
		if second.URL != "" {
			*errs = append(*errs, fmt.Errorf("--sim starts its own %s: drop --%s", second.Role, second.Flag))
		}
		endpoint = ""
	case endpoint == "":
		*errs = append(*errs, errors.New("--base-url URL is required (or "+EnvEndpoint+", or --sim)"))
	default:
		if err := serving.CheckURL(endpoint); err != nil {
			*errs = append(*errs, fmt.Errorf("--base-url: %w", err))
		}
	}
	if second.URL != "" {
		if err := serving.CheckURL(second.URL); err != nil {
			*errs = append(*errs, fmt.Errorf("--%s: %w", second.Flag, err))
		}
	}
	if err := CheckSimTimeScale(f.SimScale); err != nil {
		*errs = append(*errs, err)
	}
	return endpoint
}

// AddFull adds --full to a client command whose --sim default is a short
// grid: the flags named in grid (flag name, its default against a server)
// keep their full default with --sim only when --full is given.
func AddFull(fs *pflag.FlagSet, p *bool, grid string) {
	ServerGroup.Bind(fs, func(fs *pflag.FlagSet) {
		fs.BoolVar(p, "full", false, "with --sim, the full grid ("+grid+"), the default against a server; without it --sim runs a short grid (under 2 minutes on 2 cores)")
	})
}

// ShortGrid sets *value to short when the run is --sim, --full is not
// given and the flag called name was left at its default.
func ShortGrid(fs *pflag.FlagSet, sim, full bool, name string, value *string, short string) {
	if sim && !full && !fs.Changed(name) {
		*value = short
	}
}

// addSimTimeScale adds --sim-time-scale, removed: a simulator run faster
// than real time cannot give back real-time figures (its own processing
// time, which does not scale, is folded into what it models). Given 1, it
// is accepted with a deprecation warning (WarnSimTimeScale); any other
// value is bad input (CheckSimTimeScale). It is hidden from the usage.
func addSimTimeScale(fs *pflag.FlagSet, v *float64) {
	fs.Float64Var(v, "sim-time-scale", 1, "removed: the embedded sim runs in real time")
	fs.MarkHidden("sim-time-scale")
}

// WarnSimTimeScale says on stderr that --sim-time-scale 1 is deprecated.
func (f *ServerFlags) WarnSimTimeScale(stderr io.Writer) {
	if f.FS.Changed("sim-time-scale") && f.SimScale == 1 {
		fmt.Fprintf(stderr, "kvtier %s: warning: --sim-time-scale is deprecated and will go: the embedded sim always runs in real time (kvtier sim --time-scale still scales a standalone server)\n", f.FS.Name())
	}
}

// CheckSimTimeScale rejects --sim-time-scale other than 1.
func CheckSimTimeScale(v float64) error {
	if v == 1 {
		return nil
	}
	return option.Errorf("sim-time-scale", "%g: removed; a scaled simulator cannot give real-time figures back (its own processing time does not scale), so the embedded sim runs in real time: drop the flag (kvtier sim --time-scale still scales a standalone server)", v)
}

// SayEstimate says, before a --sim run starts, how long it will take:
// configs configurations of reps reps each (the --full grid's when full),
// est by the simulator's cost model, the one the progress's ETA weighs
// the configurations by.
func SayEstimate(w io.Writer, cmd string, full bool, configs, reps int, est time.Duration) {
	grid := ""
	if full {
		grid = "--full: "
	}
	fmt.Fprintf(w, "kvtier %s: %s%s × %s, estimated %s from the simulator's cost model (a loaded machine takes longer)\n",
		cmd, grid, units.Count(configs, "configuration", "configurations"), units.Count(reps, "rep", "reps"), est.Round(time.Second))
}
