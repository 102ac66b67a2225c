package serving

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestPickModel(t *testing.T) {
	models := []Model{{ID: "a", MaxModelLen: 1024}, {ID: "b", MaxModelLen: 2048, OwnedBy: "kvtier"}}
	for _, tc := range []struct {
		name   string
		models []Model
		want   string
		id     string
		maxLen int
		ok     bool
	}{
		{"first when unnamed", models, "", "a", 1024, true},
		{"named", models, "b", "b", 2048, true},
		{"named but not listed", models, "c", "c", 0, true},
		{"none listed, named", nil, "c", "c", 0, true},
		{"none listed, unnamed", nil, "", "", 0, false},
		{"empty ids skipped", []Model{{ID: ""}, {ID: "x", MaxModelLen: 8}}, "", "x", 8, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, ok := pickModel(tc.models, tc.want)
			if m.ID != tc.id || m.MaxModelLen != tc.maxLen || ok != tc.ok {
				t.Errorf("pickModel(%q) = %+v, %v; want id %q max %d, %v", tc.want, m, ok, tc.id, tc.maxLen, tc.ok)
			}
		})
	}
}

func TestTokenIDs(t *testing.T) {
	a := TokenIDs(1, PurposeHash("warm"), 64)
	if !slices.Equal(a, TokenIDs(1, PurposeHash("warm"), 64)) {
		t.Fatal("same seed and stream gave different ids")
	}
	if !slices.Equal(a[:4], TokenIDs(1, PurposeHash("warm"), 4)) {
		t.Error("a shorter n is not a prefix of a longer one")
	}
	if slices.Equal(a, TokenIDs(1, PurposeHash("evict-0"), 64)) || slices.Equal(a, TokenIDs(2, PurposeHash("warm"), 64)) {
		t.Error("another purpose or seed gave the same ids")
	}
	for i, id := range a {
		if id < 100 || id >= 30000 {
			t.Fatalf("id %d = %d, outside [100, 30000)", i, id)
		}
	}
}

// TestServedModel checks the one way every HTTP suite finds its model:
// the server's list, the ErrUnreachable of a server that cannot be
// listed, and a kvtier-owned model marking the client simulated.
func TestServedModel(t *testing.T) {
	t.Parallel()
	serve := func(body string) string {
		hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, body)
		}))
		t.Cleanup(hs.Close)
		return hs.URL
	}
	vllm := serve(`{"object":"list","data":[{"id":"m1","owned_by":"vllm","max_model_len":4096}]}`)
	sim := serve(`{"object":"list","data":[{"id":"s1","owned_by":"kvtier-sim"}]}`)
	empty := serve(`{"object":"list","data":[]}`)
	closed := httptest.NewServer(http.NotFoundHandler())
	closed.Close()
	tests := []struct {
		name, url, want string
		id              string
		simulated       bool
		err             string
		unreachable     bool
	}{
		{"first", vllm, "", "m1", false, "", false},
		{"named", vllm, "other", "other", false, "", false},
		{"owned by kvtier", sim, "", "s1", true, "", false},
		{"none served", empty, "", "", false, "serves no model", false},
		{"unreachable", closed.URL, "", "", false, "endpoint unreachable", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, err := NewClient(tt.url, 5*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			m, err := c.ServedModel(context.Background(), tt.want)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) || errors.Is(err, ErrUnreachable) != tt.unreachable {
					t.Fatalf("ServedModel = %+v, %v; want an error with %q (unreachable %v)", m, err, tt.err, tt.unreachable)
				}
				return
			}
			if err != nil || m.ID != tt.id || c.Simulated() != tt.simulated {
				t.Fatalf("ServedModel = %+v, %v, simulated %v; want %q, simulated %v", m, err, c.Simulated(), tt.id, tt.simulated)
			}
		})
	}
}

// TestNewMeasuringClient checks the client a measuring run builds: its
// bounds, its HTTP client and its breaker, or the endpoint's error.
func TestNewMeasuringClient(t *testing.T) {
	hc := &http.Client{}
	tests := []struct {
		name     string
		endpoint string
		hc       *http.Client
		max      int32
		wantErr  bool
	}{
		{"breaker set", "http://127.0.0.1:1", hc, 3, false},
		{"never trips", "http://127.0.0.1:1", nil, 0, false},
		{"not a URL", "127.0.0.1:1", nil, 3, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := NewMeasuringClient(tt.endpoint, 5*time.Second, time.Second, tt.hc, int(tt.max))
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, want error %v", err, tt.wantErr)
			}
			if err != nil {
				return
			}
			if c.brk.max != tt.max || c.Timeout != 5*time.Second || c.Idle != time.Second {
				t.Errorf("max %d timeout %v idle %v, want %d 5s 1s", c.brk.max, c.Timeout, c.Idle, tt.max)
			}
			if tt.hc != nil && c.HTTP != tt.hc {
				t.Error("the given HTTP client is not used")
			}
		})
	}
}

// An endpoint that is no server's URL is refused in one short line
// naming what is wrong, with the URL it may have meant.
func TestCheckURL(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ endpoint, want string }{
		{"http://127.0.0.1:8000", ""},
		{"https://user:pw@host.example/v1", ""},
		{"http://[::1]:8000", ""},
		{"127.0.0.1:8000", `(did you mean "http://127.0.0.1:8000"?)`},
		{"localhost:8000", `(did you mean "http://localhost:8000"?)`},
		{"ftp://host:21", "is not an http(s) URL"},
		{"http://[::1", "is not an http(s) URL"},
		{"http://127.0.0.1:99999", "port 99999 is not a port"},
		{"http://127.0.0.1:0", "port 0 is not a port"},
		{"http://" + strings.Repeat("a", 100000) + ":1", "100000 characters long"},
	} {
		err := CheckURL(tc.endpoint)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%.40q: %v", tc.endpoint, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want) || len(err.Error()) > 300):
			t.Errorf("%.40q: error %.300v, want a short one saying %q", tc.endpoint, err, tc.want)
		}
	}
}

// TestPromptIDsBody: a prompt's ids are written as encoding/json would
// write the slice, without its reflection.
func TestPromptIDsBody(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		ids  []int
		want string
	}{{[]int{1, 22, 333}, `"prompt":[1,22,333]`}, {[]int{}, `"prompt":[]`}, {nil, `"prompt":null`}} {
		b, err := Request{Prompt: tt.ids}.body(false)
		if err != nil || !strings.Contains(string(b), tt.want) {
			t.Errorf("%v: %s, %v; want %s", tt.ids, b, err, tt.want)
		}
	}
}
