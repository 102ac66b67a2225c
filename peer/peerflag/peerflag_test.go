package peerflag

import (
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/kvtier/kvtier/cli"
	"github.com/kvtier/kvtier/peer"
)

// TestIBQoSFromEnv checks that NCCL_IB_TC and NCCL_IB_SL fill --ib-tc and
// --ib-sl only where the command line left them out, and that a bad
// value is an error naming the variable.
func TestIBQoSFromEnv(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args       []string
		env        map[string]string
		tc, sl     int
		errContain string
	}{
		{nil, map[string]string{"NCCL_IB_TC": "106", "NCCL_IB_SL": "3"}, 106, 3, ""},
		{[]string{"--ib-tc", "32"}, map[string]string{"NCCL_IB_TC": "106"}, 32, 0, ""},
		{nil, map[string]string{"NCCL_IB_TC": "256"}, 0, 0, `NCCL_IB_TC="256": want an integer 0-255`},
		{nil, map[string]string{"NCCL_IB_SL": "x"}, 0, 0, `NCCL_IB_SL="x"`},
		{[]string{"--ib-sl", "2"}, map[string]string{"NCCL_IB_SL": "x"}, 0, 2, ""},
		// -1 is how NCCL's own scripts say unset.
		{nil, map[string]string{"NCCL_IB_TC": "-1", "NCCL_IB_SL": " -1 "}, 0, 0, ""},
	} {
		fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
		var tcv, slv int
		AddIBQoS(fs, &tcv, &slv)
		if err := fs.Parse(tc.args); err != nil {
			t.Fatal(err)
		}
		err := IBQoSFromEnv(fs, func(k string) string { return tc.env[k] })
		if tc.errContain != "" {
			if err == nil || !strings.Contains(err.Error(), tc.errContain) {
				t.Errorf("%v %v: %v, want %q", tc.args, tc.env, err, tc.errContain)
			}
			continue
		}
		if err != nil || tcv != tc.tc || slv != tc.sl {
			t.Errorf("%v %v: tc %d sl %d (%v), want %d %d", tc.args, tc.env, tcv, slv, err, tc.tc, tc.sl)
		}
	}
}

// TestShippedBinaryReadsNoFaultSwitches: without -tags
// kvtier_testfaults the KVTIER_TEST_* switches (one of which turned the
// bounds checks off) do nothing; before, the shipped binary read them.
func TestShippedBinaryReadsNoFaultSwitches(t *testing.T) {
	t.Parallel()
	getenv := func(string) string { return "1" }
	if f := buildFaults(getenv); f.SkipBounds || f.CorruptRKey || f.OutOfPool {
		t.Errorf("shipped binary's faults = %+v", f)
	}
	if f := EnvFaults(getenv); !f.SkipBounds || !f.CorruptRKey || !f.OutOfPool {
		t.Errorf("the tests' faults do not read the environment: %+v", f)
	}
}

// TestQoSEnvOnlyWithItsFlags: parsing reads NCCL_IB_TC and NCCL_IB_SL
// for a command that binds the QoS flags, and a command without them
// never asks the environment for them.
func TestQoSEnvOnlyWithItsFlags(t *testing.T) {
	t.Parallel()
	for _, bind := range []bool{true, false} {
		fs := cli.NewFlagSet("x", "", io.Discard)
		var tc, sl int
		if bind {
			AddIBQoS(fs, &tc, &sl)
		}
		var asked []string
		getenv := func(k string) string { asked = append(asked, k); return "3" }
		if _, ok := cli.ParseFlags(fs, nil, io.Discard, getenv); !ok {
			t.Fatalf("bind %v: parse failed", bind)
		}
		read := slices.Contains(asked, "NCCL_IB_TC") || slices.Contains(asked, "NCCL_IB_SL")
		if read != bind || bind && (tc != 3 || sl != 3) {
			t.Errorf("bind %v: asked %v, --ib-tc %d --ib-sl %d", bind, asked, tc, sl)
		}
	}
}

// TestIdleTimeoutOneMeaning: --idle-timeout means the same wherever it
// is: the peer's default and usage are cli's.
func TestIdleTimeoutOneMeaning(t *testing.T) {
	t.Parallel()
	if peer.DefaultIdleTimeout != cli.DefaultIdleTimeout || peer.IdleTimeoutUsage != cli.IdleTimeoutUsage {
		t.Errorf("peer's idle timeout %v %q, cli's %v %q", peer.DefaultIdleTimeout, peer.IdleTimeoutUsage, cli.DefaultIdleTimeout, cli.IdleTimeoutUsage)
	}
}

// NCCL_IB_TC and NCCL_IB_SL set the QPs' QoS for transport verbs only:
// with --transport tcp (no queue pair to carry them) they are not read,
// so a run does not record them as applied (and --ib-tc given there is
// refused: peer.CheckQoS).
func TestQoSEnvNotForTCP(t *testing.T) {
	t.Parallel()
	for _, tr := range []string{peer.TCP, peer.Verbs} {
		fs := cli.NewFlagSet("x", "", io.Discard)
		var tc, sl int
		transport := tr
		fs.StringVar(&transport, "transport", tr, "")
		AddIBQoS(fs, &tc, &sl)
		getenv := func(k string) string { return map[string]string{"NCCL_IB_TC": "106", "NCCL_IB_SL": "3"}[k] }
		if _, ok := cli.ParseFlags(fs, nil, io.Discard, getenv); !ok {
			t.Fatalf("%s: parse failed", tr)
		}
		if applied := tc == 106 && sl == 3; applied != (tr == peer.Verbs) {
			t.Errorf("transport %s: --ib-tc %d --ib-sl %d", tr, tc, sl)
		}
	}
	if err := peer.CheckQoS(peer.TCP, 106, 0); err == nil || !strings.Contains(err.Error(), "ib-tc") {
		t.Errorf("--ib-tc 106 on tcp: %v", err)
	}
}
