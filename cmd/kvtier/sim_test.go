package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/kvtier/kvtier/internal/syncbuf"
)

func TestSimBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"--gpu-blocks", "0"},
		{"--profile", "nope"},
		{"--max-model-len", "lots"},
		{"--model", "gpt-9"},
		{"--time-scale", "-1"},
		{"--kv-peer", "localhost:8000"},
		{"--calibrate", "/nonexistent/sweep.csv"},
		{"--role", "decoder"},
		{"--host-store-gbps", "-1"},
		{"extra"},
	} {
		var stdout, stderr bytes.Buffer
		if rc := dispatch(context.Background(), &stdout, &stderr, append([]string{"sim"}, args...)); rc != exitUsage {
			t.Errorf("%v: exit %d, want %d", args, rc, exitUsage)
		}
		if lines := strings.Count(stderr.String(), "\n"); lines != 1 || !strings.HasPrefix(stderr.String(), "kvtier sim: ") {
			t.Errorf("%v: stderr %q, want one line", args, stderr.String())
		}
		if stdout.Len() != 0 {
			t.Errorf("%v: stdout %q", args, stdout.String())
		}
	}
	// Every problem at once.
	var stderr bytes.Buffer
	dispatch(context.Background(), io.Discard, &stderr, []string{"sim", "--gpu-blocks", "0", "--profile", "nope"})
	if !strings.Contains(stderr.String(), "--gpu-blocks") || !strings.Contains(stderr.String(), "--profile") {
		t.Errorf("not every problem reported: %q", stderr.String())
	}
}

func TestSimServesUntilCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stdout, stderr syncbuf.Buffer
	rc := make(chan int, 1)
	go func() {
		rc <- dispatch(ctx, &stdout, &stderr, []string{"sim", "--listen", "127.0.0.1:0", "--time-scale", "0", "--gpu-blocks", "256", "--enable-prompt-tokens-details"})
	}()
	var url string
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if out := stdout.String(); strings.Contains(out, "\n") {
			if !strings.HasPrefix(out, "kvtier sim: serving qwen3-coder-30b-a3b (simulated) on http://127.0.0.1:") {
				t.Fatalf("stdout %q", out)
			}
			url = strings.Fields(out)[len(strings.Fields(out))-1]
			break
		}
	}
	if url == "" {
		t.Fatalf("no ready line; stderr %q", stderr.String())
	}
	resp, err := http.Post(url+"/v1/completions", "application/json", strings.NewReader(`{"prompt": "a b c", "max_tokens": 2}`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("X-Kvtier-Simulated") != "1" {
		t.Errorf("completion: %d %s", resp.StatusCode, body)
	}
	// The store rate is labelled assumed: the reference measured none.
	for deadline := time.Now().Add(5 * time.Second); !strings.Contains(stderr.String(), "\n") && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	if !strings.Contains(stderr.String(), "store 40 GB/s, assumed)") {
		t.Errorf("stderr does not label the store rate assumed: %q", stderr.String())
	}
	cancel()
	select {
	case code := <-rc:
		if code != exitOK {
			t.Errorf("exit %d after cancel; stderr %q", code, stderr.String())
		}
	case <-time.After(5 * time.Second):
		t.Fatal("sim did not stop after cancel")
	}
}
