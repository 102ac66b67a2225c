package peer

import (
	"errors"
	"testing"

	"github.com/kvtier/kvtier/option"
)

// The settings the remote tier and MB2 share report each bad field by
// its flag, and record what the manifest keeps (never the token).
func TestClientSettings(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		edit  func(*ClientSettings)
		field string
	}{
		{"transport", func(s *ClientSettings) { s.Transport = "udp" }, "transport"},
		{"conns", func(s *ClientSettings) { s.Conns = 0 }, "conns"},
		{"gid", func(s *ClientSettings) { s.GIDIndex = -2 }, "gid-index"},
		{"tc", func(s *ClientSettings) { s.IBTC = 256 }, "ib-tc"},
		{"sl", func(s *ClientSettings) { s.IBSL = 16 }, "ib-sl"},
		{"idle", func(s *ClientSettings) { s.IdleTimeout = -1 }, "idle-timeout"},
	} {
		s := DefaultClientSettings(2)
		if err := errors.Join(s.Errors()...); err != nil {
			t.Fatalf("defaults: %v", err)
		}
		tc.edit(&s)
		var oe *option.Error
		if err := errors.Join(s.Errors()...); !errors.As(err, &oe) || oe.Field != tc.field {
			t.Errorf("%s: got %v, want an error naming %s", tc.name, err, tc.field)
		}
	}
	s := DefaultClientSettings(3)
	s.Token = "secret"
	m := map[string]string{}
	s.Record(m)
	if m["conns"] != "3" || m["transport"] != TCP || m["gid_index"] != "-1" || len(m) != 7 {
		t.Errorf("Record: %v", m)
	}
	for _, v := range m {
		if v == "secret" {
			t.Error("Record wrote the token")
		}
	}
}
