//go:build servers

package realserver

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kvtier/kvtier/internal/gguf"
)

var (
	ollamaBin    = flag.String("ollama", "", "an ollama binary run with its llama.cpp runner (v0.6.8)")
	ollamaVer    = flag.String("ollama-version", "v0.6.8", "the version of -ollama, for the tests' names")
	ollamaNewBin = flag.String("ollama-new", "", "an ollama binary run with OLLAMA_NEW_ENGINE=1, its own Go runner (v0.9.6)")
	ollamaNewVer = flag.String("ollama-new-version", "v0.9.6", "the version of -ollama-new, for the tests' names")
	kvtierBin    = flag.String("kvtier", "", "the kvtier binary to test")
	keepDir      = flag.String("keep", "", "leave each test's server log and kvtier results under this directory")
)

// An engine is one Ollama build the tests run, and how.
type engine struct {
	name string // the subtests' name: "v0.6.8", "v0.9.6-new-engine"
	bin  string
	// newEngine runs it with OLLAMA_NEW_ENGINE=1 (runner/ollamarunner),
	// serving a model whose vocabulary that engine reads (byte-level BPE).
	newEngine bool
}

// engines returns the engines given, skipping the test when there are
// none or no kvtier binary (a plain `go test -tags servers`).
func engines(t *testing.T) []engine {
	t.Helper()
	var es []engine
	if *ollamaBin != "" {
		es = append(es, engine{name: *ollamaVer, bin: *ollamaBin})
	}
	if *ollamaNewBin != "" {
		es = append(es, engine{name: *ollamaNewVer + "-new-engine", bin: *ollamaNewBin, newEngine: true})
	}
	if len(es) == 0 || *kvtierBin == "" {
		t.Skip("needs -ollama BIN and/or -ollama-new BIN, and -kvtier BIN (make test-servers gives them)")
	}
	return es
}

// forEngines runs f as a subtest per engine.
func forEngines(t *testing.T, f func(t *testing.T, e engine)) {
	for _, e := range engines(t) {
		t.Run(e.name, func(t *testing.T) { f(t, e) })
	}
}

// model is the engine's test model: tinyLlama with the vocabulary the
// engine reads.
func (e engine) model() gguf.LlamaConfig {
	c := tinyLlama
	if e.newEngine {
		c.Tokenizer = gguf.TokenizerGPT2
	}
	return c
}

// The model every test serves, and the server's settings.
const (
	modelName = "kvtier-tiny"
	// numCtx is Ollama's num_ctx, the context of one request: above the
	// longest prompt the tests send (4k and a few hundred tokens of
	// replay's sessions, plus output), so nothing is cut.
	numCtx = 8192
	// defaultParallel is Ollama's own default of parallel slots on a
	// CPU (OLLAMA_NUM_PARALLEL unset: server/sched.go's defaultParallel
	// in v0.6.8 and v0.9.6), which the tests keep: interfere's D=2 and
	// its prefill need one more.
	defaultParallel = 2
	// numThread is the runner's threads: one. ggml's threads meet at a
	// barrier after every operation; on a loaded machine each barrier
	// waits for a descheduled thread, and two threads decode this model
	// at 0.3 s a token where one takes 0.4 ms.
	numThread = 1
)

// tinyLlama is the served model's geometry: small enough that a 4k
// prompt prefills in about a second on one idle core (most of it
// attention, quadratic in L: Ollama's CPU build has no SIMD).
var tinyLlama = gguf.LlamaConfig{Layers: 2, Embed: 16, FeedForward: 32, Heads: 2, KVHeads: 1, Context: 16384, Seed: 1}

// workDir is a test's temporary directory, or one under -keep.
func workDir(t *testing.T) string {
	t.Helper()
	if *keepDir == "" {
		return t.TempDir()
	}
	d := filepath.Join(*keepDir, strings.ReplaceAll(t.Name(), "/", "_"))
	if err := os.RemoveAll(d); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(d, 0o755); err != nil {
		t.Fatal(err)
	}
	return d
}

// freePort returns a loopback TCP port nothing listens on now.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// ollamaEnv is the whole environment of engine e's server run from dir:
// loopback only, its own models directory and home (where it writes its
// key pair), the tests' context, Ollama's default slots, its debug log
// (whose cache lines kvtier's --server-log reads), no proxy, and mark,
// the marker that finds every process it starts.
func (e engine) env(dir, host, mark string) []string {
	env := []string{
		"PATH=/usr/local/bin:/usr/bin:/bin",
		"HOME=" + filepath.Join(dir, "home"),
		"OLLAMA_HOST=" + host,
		"OLLAMA_MODELS=" + filepath.Join(dir, "models"),
		"OLLAMA_MAX_LOADED_MODELS=1",
		"OLLAMA_KEEP_ALIVE=1h",
		"OLLAMA_CONTEXT_LENGTH=" + strconv.Itoa(numCtx),
		"OLLAMA_DEBUG=1",
		markerVar + "=" + mark,
	}
	if e.newEngine {
		env = append(env, "OLLAMA_NEW_ENGINE=1")
	}
	return env
}

// An ollama is one `ollama serve` a test started, in a process group of
// its own.
type ollama struct {
	url  string // http://127.0.0.1:PORT
	dir  string
	log  string // its log: stdout and stderr, its runners' included
	mark string
	cmd  *exec.Cmd
	done chan struct{} // closed when cmd has been waited for
}

// startOllama starts `ollama serve` on a free loopback port with its own
// directories under dir, waits until it answers, registers the test
// model, and stops it (and checks nothing of it is left) when t ends.
func startOllama(t *testing.T, e engine, dir string) *ollama {
	t.Helper()
	host := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	o := &ollama{url: "http://" + host, dir: dir, log: filepath.Join(dir, "ollama.log"), mark: newMark(t), done: make(chan struct{})}
	logf, err := os.Create(o.log)
	if err != nil {
		t.Fatal(err)
	}
	o.cmd = exec.Command(e.bin, "serve")
	o.cmd.Dir = dir
	o.cmd.Env = e.env(dir, host, o.mark)
	o.cmd.Stdout, o.cmd.Stderr = logf, logf
	// Its own group, so one signal reaches the runners it starts; and
	// SIGTERM should the test process die first (Ollama then unloads its
	// runners before it exits).
	o.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
	if err := o.cmd.Start(); err != nil {
		logf.Close()
		t.Fatalf("starting %s serve: %v", e.bin, err)
	}
	go func() { o.cmd.Wait(); logf.Close(); close(o.done) }()
	t.Cleanup(func() { o.stop(t) })
	if err := o.waitReady(30 * time.Second); err != nil {
		t.Fatalf("ollama serve: %v\n%s", err, tail(filepath.Join(dir, "ollama.log")))
	}
	if err := o.createModel(filepath.Join(dir, "model.gguf"), e.model()); err != nil {
		t.Fatalf("registering the model: %v\n%s", err, tail(filepath.Join(dir, "ollama.log")))
	}
	return o
}

// stop ends the server's process group (SIGTERM, then SIGKILL after 10 s)
// and fails t if any process carrying its marker is left.
func (o *ollama) stop(t *testing.T) {
	t.Helper()
	pgid := o.cmd.Process.Pid
	syscall.Kill(-pgid, syscall.SIGTERM)
	select {
	case <-o.done:
	case <-time.After(10 * time.Second):
		t.Errorf("ollama serve ignored SIGTERM for 10 s: killed")
	}
	// The runners share the group; whatever remains of it goes now.
	syscall.Kill(-pgid, syscall.SIGKILL)
	<-o.done
	checkNoneLeft(t, o.mark)
}

// waitReady polls GET /api/version until the server answers or d passes.
func (o *ollama) waitReady(d time.Duration) error {
	deadline := time.Now().Add(d)
	for {
		select {
		case <-o.done:
			return errors.New("exited before it answered")
		default:
		}
		resp, err := http.Get(o.url + "/api/version")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("no answer at %s/api/version within %v (last: %v)", o.url, d, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// createModel writes the random model to path, uploads it as a blob and
// creates modelName from it with num_ctx pinned, as `ollama create` does
// for a Modelfile "FROM ./model.gguf" with "PARAMETER num_ctx ..." and
// "PARAMETER num_thread 1".
func (o *ollama) createModel(path string, model gguf.LlamaConfig) error {
	f, err := gguf.Llama(model)
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	if err := f.Write(&buf); err != nil {
		return err
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		return err
	}
	sum := sha256.Sum256(buf.Bytes())
	digest := "sha256:" + hex.EncodeToString(sum[:])
	if _, err := o.post("/api/blobs/"+digest, "application/octet-stream", buf.Bytes()); err != nil {
		return err
	}
	req, _ := json.Marshal(map[string]any{
		"model":      modelName,
		"files":      map[string]string{"model.gguf": digest},
		"parameters": map[string]any{"num_ctx": numCtx, "num_thread": numThread},
		"stream":     false,
	})
	_, err = o.post("/api/create", "application/json", req)
	return err
}

// post sends body to path and returns the response body, an error for
// any status but 200 and 201.
func (o *ollama) post(path, ctype string, body []byte) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, o.url+path, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", ctype)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("POST %s: %w", path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("POST %s: %w", path, err)
	}
	if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusCreated {
		return nil, fmt.Errorf("POST %s: %s: %s", path, resp.Status, bytes.TrimSpace(b))
	}
	return b, nil
}

// tail is the last lines of a log file, for a failure message.
func tail(path string) string {
	b, _ := os.ReadFile(path)
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > 30 {
		lines = lines[len(lines)-30:]
	}
	return path + ":\n" + strings.Join(lines, "\n")
}
