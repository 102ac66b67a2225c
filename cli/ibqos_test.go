package cli

import (
	"strings"
	"testing"

	"github.com/spf13/pflag"
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
