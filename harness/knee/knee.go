// Package knee measures a server's capacity knee: for each GPU KV
// capacity it starts a server with that many KV blocks (from a command,
// or kvtier's embedded simulator), waits for GET /health, replays the
// same workload against it (package replay), records the realized APC
// and the TTFT percentiles, and stops it; the realized APC against
// capacity, beside the LRU model's prediction and the workload's working
// set, shows where adding KV capacity stops paying.
//
// A server started from a command leads a process group of its own and
// is stopped with SIGTERM to the group, then SIGKILL after a grace
// period, so no process it started outlives the sweep, also when kvtier
// is interrupted; its stdout and stderr go to a file of the results
// directory. A server that fails to start or exits during its run gives
// an error row for its capacity and the sweep goes on.
package knee

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"time"

	"github.com/kvtier/kvtier/harness"
	"github.com/kvtier/kvtier/option"
	"github.com/kvtier/kvtier/replayer"
	"github.com/kvtier/kvtier/results"
	"github.com/kvtier/kvtier/serving"
	"github.com/kvtier/kvtier/units"
	"github.com/kvtier/kvtier/vllmsim"
)

// A Config says what a knee sweep runs.
type Config struct {
	// Capacities are the GPU KV pools to measure, in blocks, one server
	// each, in the order given.
	Capacities    []int
	BlockSize     int   // tokens per block of the servers started
	BytesPerToken int64 // KV bytes of one token of the model; 0 unknown
	// Server is the command that starts a server; nil: the embedded
	// simulator, configured by Sim (its GPU pool and max_model_len are
	// set per capacity).
	Server *Command
	Sim    vllmsim.Config
	// Net, when not nil, serves the embedded simulators on this in-memory
	// network instead of sockets (tests, in virtual time).
	Net           *vllmsim.MemNet
	HealthTimeout time.Duration // for GET /health to answer 200
	Grace         time.Duration // between SIGTERM and SIGKILL
	// Replay is how the workload is sent; its Endpoint and GPUBlocks are
	// set per capacity.
	Replay replayer.Config
	Dir    string    // where server logs go: the results directory
	Log    io.Writer // progress; nil for none
}

// Validate reports every unusable field, naming its option.
func (c Config) Validate() error {
	var errs []error
	if len(c.Capacities) == 0 {
		errs = append(errs, option.Errorf("capacities", "no capacity to measure"))
	}
	for _, b := range c.Capacities {
		if b < 1 {
			errs = append(errs, option.Errorf("capacities", "%d blocks: must be positive", b))
		}
	}
	errs = append(errs, option.Positive("block-size", c.BlockSize))
	if c.Server != nil && !c.Server.UsesPort() {
		errs = append(errs, option.Errorf("server-cmd", "takes no {port}: kvtier would not know where the server listens"))
	}
	errs = append(errs, option.Positive("health-timeout", c.HealthTimeout), option.Positive("stop-grace", c.Grace))
	return errors.Join(errs...)
}

// Sinks are where a sweep writes: per request and per capacity.
type Sinks struct {
	Requests, Capacities results.Sink
	// Curve receives the LRU model's curve (CurveColumns); nil: none.
	Curve results.Sink
	// AddFile records a file the sweep wrote (a server log); nil: none.
	AddFile func(path string)
}

// Run measures every capacity in turn with the workload w, writing
// request rows and one row per capacity as they are measured. A capacity
// whose server cannot start, or exits during its run, is an error row;
// the sweep goes on. Run returns early, with every server stopped, when
// ctx is cancelled or a row cannot be written.
func Run(ctx context.Context, cfg Config, w *replayer.Workload, s Sinks) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	ws, err := w.WorkingSet(cfg.Replay.Dispatch, cfg.Replay.Concurrency)
	if err != nil {
		return err
	}
	if s.Curve != nil {
		if err := writeCurve(s.Curve, cfg, w, ws); err != nil {
			return err
		}
	}
	pr := harness.ProgressOf(cfg.Log)
	pr.Plan(len(cfg.Capacities))
	for i, blocks := range cfg.Capacities {
		pr.Begin(fmt.Sprintf("%d GPU blocks", blocks))
		row, err := measure(ctx, cfg, w, s, i, blocks, ws)
		pr.End(outcome(row, err))
		if errors.Is(err, errNoPool) {
			return refuse(cfg, s, i, ws, err)
		}
		if err != nil {
			return err
		}
		if err := s.Capacities.Write(row); err != nil {
			return err
		}
	}
	return nil
}

// outcome is what a capacity's row, or the error that stopped it, says
// in the run's progress: "replayed" only when requests were answered.
func outcome(row results.Row, err error) string {
	switch {
	case errors.Is(err, errNoPool):
		return "refused: " + err.Error()
	case err != nil:
		return "stopped: " + err.Error()
	case row.Status == results.StatusError:
		return "failed: " + row.Reason
	case row.Status == results.StatusSkipped:
		return "skipped: " + row.Reason
	case row.Get("ok") == "" || row.Get("ok") == "0":
		return "nothing replayed: no request was answered"
	}
	return fmt.Sprintf("replayed: %s of %s requests answered", row.Get("ok"), row.Get("requests"))
}

// measure runs the workload against a server of blocks GPU blocks and
// returns its row; the error is an interruption or a failed write.
func measure(ctx context.Context, cfg Config, w *replayer.Workload, s Sinks, i, blocks int, ws int64) (results.Row, error) {
	row := capacityRow(cfg, blocks, ws)
	pr := harness.ProgressOf(cfg.Log)
	pr.Wait(fmt.Sprintf("the server of %d GPU blocks to start", blocks))
	srv, err := start(ctx, cfg, i, blocks)
	pr.Wait("")
	if srv != nil && srv.Log() != "" && s.AddFile != nil {
		s.AddFile(srv.Log())
	}
	if err != nil {
		if ctx.Err() != nil {
			return row, ctx.Err()
		}
		row.Fail(fmt.Errorf("server of %d blocks did not start: %w%s", blocks, err, logHint(srv)))
		return row, nil
	}
	defer func() {
		if err := srv.Stop(); err != nil && cfg.Log != nil {
			fmt.Fprintf(cfg.Log, "kvtier knee: %d blocks: stopping the server: %v\n", blocks, err)
		}
	}()
	row.Set(results.ColServer, srv.Name())
	row.Set("server_log", logName(srv))
	if err := checkPool(ctx, cfg, srv); err != nil {
		return row, err
	}
	sum, err := run(ctx, cfg, w, s, srv, blocks)
	if err != nil {
		if errors.Is(err, errWrite) || ctx.Err() != nil {
			return row, err
		}
		row.Fail(fmt.Errorf("%w%s", err, logHint(srv)))
		return row, nil
	}
	sum.SetWorkingSet(ws)
	out := sum.Row(Suite.Name)
	out.Set(results.ColServer, srv.Name())
	out.Set("server_log", logName(srv))
	select {
	case <-srv.Exited():
		out.Fail(fmt.Errorf("the server exited during the run (%v)%s", srv.ExitErr(), logHint(srv)))
	default:
	}
	return out, nil
}

// errNoPool marks a server whose family has no KV pool a launch option
// sizes: there is no knee to measure.
var errNoPool = errors.New("no KV capacity to sweep")

// checkPool asks the server's family (serving.Client.DetectFamily) and
// refuses one without a KV pool shared by requests, as Ollama's.
func checkPool(ctx context.Context, cfg Config, srv server) error {
	c, err := serving.NewClientWith(srv.URL(), 10*time.Second, 0, cfg.Replay.HTTP)
	if err != nil {
		return err
	}
	f := c.DetectFamily(ctx)
	if cfg.Log != nil {
		fmt.Fprintf(cfg.Log, "kvtier knee: the server is %s\n", f)
	}
	if ok, why := f.KVPool(); !ok {
		return &noPoolError{family: f, why: why}
	}
	return nil
}

// A noPoolError is errNoPool for a server of family.
type noPoolError struct {
	family serving.Family
	why    string
}

func (e *noPoolError) Error() string {
	return fmt.Sprintf("%v: the server is %s: %s", errNoPool, e.family, e.why)
}

func (e *noPoolError) Is(target error) bool { return target == errNoPool }

// refuse writes a skipped row for capacity i and every one after it,
// saying why, and returns the refusal.
func refuse(cfg Config, s Sinks, i int, ws int64, why error) error {
	for _, blocks := range cfg.Capacities[i:] {
		row := capacityRow(cfg, blocks, ws)
		if np := (*noPoolError)(nil); errors.As(why, &np) {
			row.Set("server_family", np.family.Name)
		}
		row.Skip(why.Error())
		if err := s.Capacities.Write(row); err != nil {
			return err
		}
	}
	return fmt.Errorf("knee refused: %w", why)
}

// errWrite marks a row that could not be written: it ends the sweep.
var errWrite = errors.New("writing a row")

// run replays the workload against srv.
func run(ctx context.Context, cfg Config, w *replayer.Workload, s Sinks, srv server, blocks int) (*replayer.Summary, error) {
	rc := cfg.Replay
	rc.Suite, rc.Endpoint, rc.GPUBlocks, rc.Simulated = Suite.Name, srv.URL(), blocks, srv.Simulated()
	rc.BlockBytes = func(_ string, bs int) int64 { return cfg.BytesPerToken * int64(bs) }
	if path := srv.Log(); path != "" {
		// The log of the server it started: its cache lines count the
		// cached tokens a response does not (Ollama with OLLAMA_DEBUG=1).
		rc.ServerLog, _ = serving.OpenServerLog(path)
	}
	rp, err := replayer.New(ctx, rc, w)
	if err != nil {
		return nil, err
	}
	if cfg.Log != nil {
		fmt.Fprintf(cfg.Log, "kvtier knee: %d blocks (%s): replaying %s\n", blocks, srv.Name(), units.Count(len(w.Requests), "request", "requests"))
	}
	sum, err := rp.Run(ctx, s.Requests, func(r *results.Row) {
		r.Set(results.ColServer, srv.Name())
		r.Set("server_log", logName(srv))
	})
	if err != nil && ctx.Err() == nil {
		err = fmt.Errorf("%w: %w", errWrite, err)
	}
	if err == nil {
		err = rp.Tripped() // a hung server: this capacity is an error row
	}
	return sum, err
}

// start starts the server of capacity i and waits for its /health.
func start(ctx context.Context, cfg Config, i, blocks int) (server, error) {
	var srv server
	client := cfg.Replay.HTTP
	if cfg.Server == nil {
		e, err := startEmbedded(ctx, cfg.Sim, blocks, cfg.Net, fmt.Sprintf("knee-%d", i))
		if err != nil {
			return nil, err
		}
		srv = e
	} else {
		port, err := freePort()
		if err != nil {
			return nil, err
		}
		v := Values{Blocks: blocks, Tokens: blocks * cfg.BlockSize, Bytes: int64(blocks*cfg.BlockSize) * cfg.BytesPerToken, Port: port}
		log := filepath.Join(cfg.Dir, fmt.Sprintf("server-%d-%dblocks.log", i, blocks))
		p, err := startProcess(cfg.Server.Expand(v), port, log, cfg.Grace)
		if err != nil {
			return nil, err
		}
		srv = p
	}
	if client == nil {
		client = &http.Client{}
	}
	if err := waitHealth(ctx, client, srv, cfg.HealthTimeout); err != nil {
		srv.Stop()
		return srv, err
	}
	return srv, nil
}

// logName is the file name of a server's log, "" when it has none.
func logName(srv server) string {
	if srv == nil || srv.Log() == "" {
		return ""
	}
	return filepath.Base(srv.Log())
}

// logHint points at a server's log, "" when it has none.
func logHint(srv server) string {
	if n := logName(srv); n != "" {
		return " (see " + n + ")"
	}
	return ""
}

// capacityRow is the row of a capacity before it is measured: what it is.
func capacityRow(cfg Config, blocks int, ws int64) results.Row {
	r := results.NewRow(Suite.Name)
	r.Backend, r.Transport, r.Status = replayer.Backend, replayer.Transport, results.StatusOK
	r.Set(results.ColSimulated, cfg.Server == nil)
	r.Set(results.ColGPUBlocks, blocks)
	r.Set("block_size", cfg.BlockSize)
	r.Set(results.ColCapacityTokens, blocks*cfg.BlockSize)
	if cfg.BytesPerToken > 0 {
		r.Set(results.ColCapacityBytes, int64(blocks*cfg.BlockSize)*cfg.BytesPerToken)
	}
	if ws > 0 {
		r.Set(results.ColWorkingSetTokens, ws)
		if cfg.BytesPerToken > 0 {
			r.Set(results.ColWorkingSetBytes, ws*cfg.BytesPerToken)
		}
	}
	r.Set(results.ColServer, EmbeddedName)
	if cfg.Server != nil {
		r.Set(results.ColServer, filepath.Base(cfg.Server.Args[0]))
	}
	return r
}
