package knee

import (
	"context"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kvtier/kvtier/internal/syncbuf"
	"github.com/kvtier/kvtier/replayer"
	"github.com/kvtier/kvtier/results"
	"github.com/kvtier/kvtier/results/resultstest"
	"github.com/kvtier/kvtier/serving/servingtest"
	"github.com/kvtier/kvtier/vllmsim"
	"github.com/kvtier/kvtier/workload"
)

// TestMain lets the test binary play a server: "knee-test-server" serves
// a simulator (the flags below say how it misbehaves), "knee-test-sleep"
// is a child process it leaves behind.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 {
		switch os.Args[1] {
		case "knee-test-server":
			os.Exit(testServer(os.Args[2:]))
		case "knee-test-sleep":
			time.Sleep(time.Hour)
			os.Exit(0)
		}
	}
	os.Exit(m.Run())
}

// testServer is the helper server: it starts a sleeping child (its pid
// and the child's written to -pidfile), then serves a simulator of
// -blocks on -port until SIGTERM.
func testServer(args []string) int {
	fs := flag.NewFlagSet("knee-test-server", flag.ContinueOnError)
	port := fs.Int("port", 0, "")
	blocks := fs.Int("blocks", 256, "")
	pidfile := fs.String("pidfile", "", "")
	ignoreTerm := fs.Bool("ignore-term", false, "ignore SIGTERM")
	exitBelow := fs.Int("exit-below", 0, "exit at once with status 3 below this many blocks")
	dieOnRequest := fs.Bool("die-on-request", false, "exit with status 4 on the first generation request")
	noListen := fs.Bool("no-listen", false, "never answer /health")
	setsidChild := fs.Bool("setsid-child", false, "start the child in a session of its own, outside the process group")
	ollama := fs.Bool("ollama", false, "serve as Ollama does (no /health, no KV pool)")
	noHealth := fs.Bool("no-health", false, "answer 404 to GET /health (readiness from GET /v1/models)")
	if fs.Parse(args) != nil {
		return 2
	}
	fmt.Fprintf(os.Stderr, "test server: %d blocks on port %d\n", *blocks, *port)
	if *blocks < *exitBelow {
		fmt.Fprintln(os.Stderr, "test server: too few blocks")
		return 3
	}
	child := exec.Command(os.Args[0], "knee-test-sleep")
	if *setsidChild {
		child.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	}
	if err := child.Start(); err != nil {
		return 5
	}
	os.WriteFile(*pidfile, []byte(fmt.Sprintf("%d %d\n", os.Getpid(), child.Process.Pid)), 0o644)
	if *ignoreTerm {
		signal.Ignore(syscall.SIGTERM)
	}
	if *dieOnRequest {
		go serveDying(*port, *blocks)
	} else if *ollama || *noHealth {
		go serveOdd(*port, *ollama)
	} else if !*noListen {
		s, err := vllmsim.New(vllmsim.Config{GPUBlocks: *blocks, TimeScale: 0.01, EnablePromptTokensDetails: true})
		if err != nil {
			return 6
		}
		if _, err := s.Start(context.Background(), "127.0.0.1:"+strconv.Itoa(*port)); err != nil {
			return 7
		}
	}
	if !*ignoreTerm {
		ch := make(chan os.Signal, 1)
		signal.Notify(ch, syscall.SIGTERM)
		<-ch
		return 0
	}
	select {}
}

// serveOdd serves, on port, an Ollama fake or a simulator without
// GET /health.
func serveOdd(port int, ollama bool) {
	var h http.Handler = &servingtest.Ollama{}
	if !ollama {
		s, err := vllmsim.New(vllmsim.Config{GPUBlocks: 256, TimeScale: 0.01})
		if err != nil {
			os.Exit(6)
		}
		h = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/health" {
				http.NotFound(w, r)
				return
			}
			s.ServeHTTP(w, r)
		})
	}
	http.ListenAndServe("127.0.0.1:"+strconv.Itoa(port), h)
	os.Exit(7)
}

// serveDying serves, on port, a simulator that exits with status 4 on
// its first generation request: it dies mid-run however long a loaded
// machine takes to start it.
func serveDying(port, blocks int) {
	s, err := vllmsim.New(vllmsim.Config{GPUBlocks: blocks, TimeScale: 0.01})
	if err != nil {
		os.Exit(6)
	}
	http.ListenAndServe("127.0.0.1:"+strconv.Itoa(port), http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/completions" {
			os.Exit(4)
		}
		s.ServeHTTP(w, r)
	}))
	os.Exit(7)
}

// A server without GET /health is ready when GET /v1/models answers,
// not after the health timeout; a server without a KV pool (Ollama) is
// refused at the start with a skipped row per capacity.
func TestReadinessAndNoPool(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		extra, want string
		caps        []int
	}{{"-no-health", "ok", []int{256}}, {"-ollama", "limits one request", []int{128, 256}}} {
		cfg := processConfig(t, t.TempDir(), tc.caps, tc.extra)
		cfg.HealthTimeout = 5 * time.Second
		var reqs, caps resultstest.Sink
		err := Run(context.Background(), cfg, smallWorkload(t), Sinks{Requests: &reqs, Capacities: &caps})
		if (err != nil) != (tc.want != "ok") || caps.Len() != len(tc.caps) {
			t.Fatalf("%s: err %v, %d capacity rows", tc.extra, err, caps.Len())
		}
		for _, r := range caps.Rows() {
			if got := string(r.Status); (tc.want == "ok" && got != "ok") || (tc.want != "ok" && (got != "skipped" || !strings.Contains(r.Reason, tc.want) || r.Get("server_family") != "ollama")) {
				t.Errorf("%s: %s %q", tc.extra, r.Status, r.Reason)
			}
		}
	}
}

// alive reports whether process pid exists and is not a zombie.
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(b)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) {
		return s[i+2] != 'Z' && s[i+2] != 'X'
	}
	return true
}

// pids reads the helper's pid and its child's from pidfile.
func pids(t *testing.T, pidfile string) []int {
	t.Helper()
	b, err := os.ReadFile(pidfile)
	if err != nil {
		t.Fatalf("the helper server wrote no pids: %v", err)
	}
	var out []int
	for f := range strings.FieldsSeq(string(b)) {
		n, _ := strconv.Atoi(f)
		out = append(out, n)
	}
	return out
}

// processConfig is a sweep of the helper server with extra flags over a
// small workload; the pidfile is in dir.
func processConfig(t *testing.T, dir string, caps []int, extra string) Config {
	t.Helper()
	cmd, err := ParseCommand(fmt.Sprintf("%s knee-test-server -port {port} -blocks {blocks} -pidfile %s %s", os.Args[0], filepath.Join(dir, "pids"), extra))
	if err != nil {
		t.Fatal(err)
	}
	return Config{
		Capacities: caps, BlockSize: 16, BytesPerToken: 1, Server: cmd, Dir: dir,
		HealthTimeout: 20 * time.Second, Grace: 5 * time.Second, Log: &syncbuf.Buffer{},
		Replay: replayer.Config{Dispatch: replayer.DispatchTimestamp, Speedup: 1, Timeout: 20 * time.Second, Seed: 1},
	}
}

// smallWorkload is 8 requests of 64 to 160 tokens, 100 ms apart.
func smallWorkload(t *testing.T) *replayer.Workload {
	t.Helper()
	w, err := replayer.Generate(context.Background(), workload.GenOptions{Sessions: 2, Turns: 4, TurnTokens: 32, OutputTokens: 4, SystemTokens: 32,
		BlockTokens: 16, Seed: 1, Fixed: true, Think: 200 * time.Millisecond, Duration: 100 * time.Millisecond}, 0)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// hookSink calls hook after each row it keeps.
type hookSink struct {
	resultstest.Sink
	hook func()
}

func (s *hookSink) Write(r results.Row) error {
	s.Sink.Write(r)
	if s.hook != nil {
		s.hook()
	}
	return nil
}

func TestServerProcessesGoneAfterCancel(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cfg := processConfig(t, dir, []int{256}, "")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	reqs := &hookSink{hook: cancel} // interrupted once the first request answered
	var caps resultstest.Sink
	err := Run(ctx, cfg, smallWorkload(t), Sinks{Requests: reqs, Capacities: &caps})
	if err == nil || ctx.Err() == nil {
		t.Fatalf("Run returned %v after the context was cancelled", err)
	}
	for _, pid := range pids(t, filepath.Join(dir, "pids")) {
		if alive(pid) {
			t.Errorf("process %d outlived the sweep", pid)
			syscall.Kill(pid, syscall.SIGKILL)
		}
	}
	if log, _ := os.ReadFile(filepath.Join(dir, "server-0-256blocks.log")); !strings.Contains(string(log), "test server: 256 blocks") {
		t.Errorf("server log %q", log)
	}
}

// A child that left the server's process group (setsid, as a
// daemonizing server does) ends with the sweep too.
func TestServerEscapedChildIsKilled(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cfg := processConfig(t, dir, []int{256}, "-setsid-child")
	var reqs, caps resultstest.Sink
	if err := Run(context.Background(), cfg, smallWorkload(t), Sinks{Requests: &reqs, Capacities: &caps}); err != nil {
		t.Fatal(err)
	}
	ps := pids(t, filepath.Join(dir, "pids"))
	deadline := time.Now().Add(5 * time.Second) // a killed process is gone once the kernel has torn it down
	for _, pid := range ps {
		for alive(pid) && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		if alive(pid) {
			t.Errorf("process %d outlived the sweep", pid)
			syscall.Kill(pid, syscall.SIGKILL)
		}
	}
	if log := cfg.Log.(*syncbuf.Buffer).String(); !strings.Contains(log, "outside its process group: killed") {
		t.Errorf("log %q does not say an escaped process was killed", log)
	}
}

func TestServerIgnoringSIGTERMIsKilled(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cfg := processConfig(t, dir, []int{256}, "-ignore-term")
	cfg.Grace = 300 * time.Millisecond
	var reqs, caps resultstest.Sink
	if err := Run(context.Background(), cfg, smallWorkload(t), Sinks{Requests: &reqs, Capacities: &caps}); err != nil {
		t.Fatal(err)
	}
	if caps.Len() != 1 || caps.Rows()[0].Status != results.StatusOK || reqs.Len() != 8 {
		t.Fatalf("%d capacity rows (%v), %d request rows", caps.Len(), caps.Rows(), reqs.Len())
	}
	for _, pid := range pids(t, filepath.Join(dir, "pids")) {
		if alive(pid) {
			t.Errorf("process %d survived SIGKILL", pid)
			syscall.Kill(pid, syscall.SIGKILL)
		}
	}
	if log := cfg.Log.(*syncbuf.Buffer).String(); !strings.Contains(log, "did not stop within 300ms of SIGTERM: killed") {
		t.Errorf("log %q does not say the server was killed", log)
	}
}

func TestServerFailuresAreErrorRows(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, extra string
		caps        []int
		want        []string // per capacity: "ok" or a piece of the reason
	}{
		{"exits at start", "-exit-below 200", []int{128, 256}, []string{"exited before it was ready: exit status 3 (see server-0-128blocks.log)", "ok"}},
		{"dies mid-run", "-die-on-request", []int{256}, []string{"the server exited during the run (exit status 4)"}},
		{"never healthy", "-no-listen", []int{256}, []string{"not ready within 1s"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			cfg := processConfig(t, dir, tc.caps, tc.extra)
			if tc.extra == "-no-listen" {
				cfg.HealthTimeout = time.Second // a server that starts takes its time on a loaded machine
			}
			cfg.Replay.Timeout = 2 * time.Second
			var reqs, caps resultstest.Sink
			if err := Run(context.Background(), cfg, smallWorkload(t), Sinks{Requests: &reqs, Capacities: &caps}); err != nil {
				t.Fatal(err)
			}
			if caps.Len() != len(tc.want) {
				t.Fatalf("%d capacity rows, want %d", caps.Len(), len(tc.want))
			}
			for i, r := range caps.Rows() {
				ok := r.Status == results.StatusOK
				if (tc.want[i] == "ok") != ok || (!ok && !strings.Contains(r.Reason, tc.want[i])) {
					t.Errorf("capacity %d: %s %q, want %q", i, r.Status, r.Reason, tc.want[i])
				}
			}
			if b, err := os.ReadFile(filepath.Join(dir, "pids")); err == nil {
				for _, pid := range pids(t, filepath.Join(dir, "pids")) {
					if alive(pid) {
						t.Errorf("process %d outlived the sweep (%s)", pid, b)
						syscall.Kill(pid, syscall.SIGKILL)
					}
				}
			}
		})
	}
}

func TestServerProgramMissing(t *testing.T) {
	t.Parallel()
	cmd, _ := ParseCommand("/nonexistent/kvtier-test-server --port {port}")
	cfg := Config{Capacities: []int{64}, BlockSize: 16, Server: cmd, Dir: t.TempDir(), HealthTimeout: time.Second, Grace: time.Second,
		Replay: replayer.Config{Dispatch: replayer.DispatchTimestamp, Speedup: 1, Timeout: time.Second}}
	var reqs, caps resultstest.Sink
	if err := Run(context.Background(), cfg, smallWorkload(t), Sinks{Requests: &reqs, Capacities: &caps}); err != nil {
		t.Fatal(err)
	}
	if caps.Len() != 1 || caps.Rows()[0].Status != results.StatusError || !strings.Contains(caps.Rows()[0].Reason, "did not start") {
		t.Errorf("rows %v", caps.Rows())
	}
}
