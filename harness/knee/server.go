package knee

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/kvtier/kvtier/serving"
	"github.com/kvtier/kvtier/vllmsim"
)

// A server is one server of the sweep, at one capacity.
type server interface {
	URL() string
	Name() string // "embedded sim", or the program
	Log() string  // the file its output went to, "" for none
	Simulated() bool
	// Exited is closed when the server process ended by itself; nil
	// for an embedded server, which does not.
	Exited() <-chan struct{}
	ExitErr() error // why it ended, once Exited is closed
	Stop() error
}

// EmbeddedName is the server column of rows measured on the embedded
// simulator.
const EmbeddedName = "embedded sim"

// embedded is a simulator in kvtier's own process.
type embedded struct {
	s   *vllmsim.Server
	url string
}

// startEmbedded starts a simulator of cfg with blocks GPU blocks on a
// socket, or on net when it is not nil (tests, in virtual time), as host.
func startEmbedded(ctx context.Context, cfg vllmsim.Config, blocks int, net *vllmsim.MemNet, host string) (*embedded, error) {
	cfg.GPUBlocks = blocks
	// As vLLM, which refuses to start with a pool that cannot hold one
	// request of max_model_len: longer requests are refused up front.
	bs := cfg.BlockSize
	if bs == 0 {
		bs = vllmsim.DefaultBlockSize
	}
	cfg.MaxModelLen = min(vllmsim.DefaultMaxModelLen, blocks*bs)
	if net != nil {
		s, url, err := net.Start(cfg, host)
		if err != nil {
			return nil, err
		}
		return &embedded{s: s, url: url}, nil
	}
	s, err := vllmsim.New(cfg)
	if err != nil {
		return nil, err
	}
	url, err := s.Start(ctx, "127.0.0.1:0")
	if err != nil {
		s.Close()
		return nil, err
	}
	return &embedded{s: s, url: url}, nil
}

func (e *embedded) URL() string             { return e.url }
func (e *embedded) Name() string            { return EmbeddedName }
func (e *embedded) Log() string             { return "" }
func (e *embedded) Simulated() bool         { return true }
func (e *embedded) Exited() <-chan struct{} { return nil }
func (e *embedded) ExitErr() error          { return nil }
func (e *embedded) Stop() error             { return e.s.Close() }

// A process is a server started from a Command, the leader of a process
// group of its own so that stopping it reaches every process it started.
type process struct {
	cmd     *exec.Cmd
	url     string
	log     string
	grace   time.Duration
	exited  chan struct{}
	waitErr error
	// cookie is an environment entry every process the server starts
	// inherits: it finds those that left the process group (setsid, a
	// daemonizing double fork), as Jenkins finds a build's processes.
	cookie string
}

// startProcess starts argv with its stdout and stderr appended to
// logPath. The process leads a new process group (Ctrl-C on the terminal
// reaches kvtier only, which stops it), and on Linux gets SIGKILL if
// kvtier dies without stopping it.
func startProcess(argv []string, port int, logPath string, grace time.Duration) (*process, error) {
	f, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cookie := newCookie()
	cmd.Env = append(cmd.Environ(), cookie)
	if err := cmd.Start(); err != nil {
		f.Close()
		return nil, err
	}
	p := &process{cmd: cmd, url: "http://127.0.0.1:" + strconv.Itoa(port), log: logPath, grace: grace,
		exited: make(chan struct{}), cookie: cookie}
	go func() {
		p.waitErr = cmd.Wait()
		f.Close()
		close(p.exited)
	}()
	return p, nil
}

func (p *process) URL() string             { return p.url }
func (p *process) Name() string            { return filepath.Base(p.cmd.Path) }
func (p *process) Log() string             { return p.log }
func (p *process) Simulated() bool         { return false }
func (p *process) Exited() <-chan struct{} { return p.exited }

func (p *process) ExitErr() error {
	if p.waitErr == nil {
		return errors.New("exited with status 0")
	}
	return p.waitErr
}

// Stop sends SIGTERM to the process group, waits up to the grace period
// for every process of it to end, then sends SIGKILL to what is left and
// waits for the leader.
func (p *process) Stop() error {
	pgid := p.cmd.Process.Pid
	syscall.Kill(-pgid, syscall.SIGTERM)
	deadline := time.Now().Add(p.grace)                   // the grace period's end, not a measurement
	for groupAlive(pgid) && time.Now().Before(deadline) { // until the grace period ends
		time.Sleep(20 * time.Millisecond)
	}
	killed := false
	if groupAlive(pgid) {
		killed = syscall.Kill(-pgid, syscall.SIGKILL) == nil
	}
	select {
	case <-p.exited:
	case <-time.After(10 * time.Second): // how long the leader may take to die of SIGKILL
		return fmt.Errorf("server (pid %d) did not exit after SIGKILL", pgid)
	}
	if n := killCookie(procRoot, p.cookie); n > 0 {
		return fmt.Errorf("server (pid %d) left %d process(es) outside its process group: killed", pgid, n)
	}
	if killed {
		return fmt.Errorf("server (pid %d) did not stop within %s of SIGTERM: killed", pgid, p.grace)
	}
	return nil
}

// procRoot is where the processes are listed.
const procRoot = "/proc"

// newCookie returns an environment entry no other process holds.
func newCookie() string {
	var b [12]byte
	rand.Read(b[:])
	return "KVTIER_SERVER_COOKIE=" + hex.EncodeToString(b[:])
}

// killCookie sends SIGKILL to every process under proc whose environment
// holds cookie and returns how many it found.
func killCookie(proc, cookie string) int {
	entries, err := os.ReadDir(proc)
	if err != nil {
		return 0
	}
	n := 0
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		env, err := os.ReadFile(filepath.Join(proc, e.Name(), "environ"))
		if err != nil || !slices.Contains(strings.Split(string(env), "\x00"), cookie) {
			continue
		}
		if syscall.Kill(pid, syscall.SIGKILL) == nil {
			n++
		}
	}
	return n
}

// groupAlive reports whether process group pgid has a process left; the
// leader counts until it has been waited for.
func groupAlive(pgid int) bool {
	return syscall.Kill(-pgid, 0) == nil
}

// freePort returns a TCP port on 127.0.0.1 that was free a moment ago.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// waitHealth polls the server's readiness (serving.Client.Ready: GET
// /health, or another signal where the server has none) until it
// answers, the server exits, timeout passes or ctx ends.
func waitHealth(ctx context.Context, hc *http.Client, s server, timeout time.Duration) error {
	c, err := serving.NewClientWith(s.URL(), 2*time.Second, 0, hc)
	if err != nil {
		return err
	}
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	var last error
	for {
		if _, last = c.Ready(ctx); last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-s.Exited():
			return fmt.Errorf("the server exited before it was ready: %w", s.ExitErr())
		case <-deadline.C:
			return fmt.Errorf("the server was not ready within %s (last: %v)", timeout, last)
		case <-tick.C:
		}
	}
}
