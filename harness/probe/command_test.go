package probe

import "testing"

// TestTierName: the probe's --tiers takes the tiers' every name (the
// sweep's hbm, host, recompute; its own gpu, cpu, miss; dram). Before, it
// refused hbm.
func TestTierName(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, probe string }{
		{"hbm", "gpu"}, {"gpu", "gpu"}, {"host", "cpu"}, {"cpu", "cpu"}, {"dram", "cpu"},
		{"recompute", "miss"}, {"miss", "miss"}, {"remote", "remote"}, {"disk", ""}, {"tape", ""},
	} {
		got, err := tierName(tc.name)
		if got != tc.probe || (err != nil) != (tc.probe == "") {
			t.Errorf("tierName(%q) = %q, %v; want %q", tc.name, got, err, tc.probe)
		}
	}
}
