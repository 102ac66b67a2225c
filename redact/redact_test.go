package redact

import (
	"slices"
	"testing"
)

func TestURL(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"http://user:secret@host:8000/v1": "http://user:***@host:8000/v1",
		"https://u:p%40ss@h":              "https://u:***@h",
		"http://user@host":                "http://user@host",
		"http://host:8000":                "http://host:8000",
		"not a url":                       "not a url",
		"http://u:p@h:bad port/x":         "http://u:***@h:bad port/x",
		"postgres://a:b@c/d?password=zzz": "postgres://a:***@c/d?password=zzz",
		"127.0.0.1:7471":                  "127.0.0.1:7471",
	} {
		if got := URL(in); got != want {
			t.Errorf("URL(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestArgs(t *testing.T) {
	t.Parallel()
	in := []string{"kvtier", "probe", "--endpoint", "http://u:pw@h", "--producer=http://a:b@p:1", "--reps", "3"}
	want := []string{"kvtier", "probe", "--endpoint", "http://u:***@h", "--producer=http://a:***@p:1", "--reps", "3"}
	if got := Args(in); !slices.Equal(got, want) {
		t.Errorf("Args = %q, want %q", got, want)
	}
	if in[3] != "http://u:pw@h" {
		t.Error("Args changed its input")
	}
}
