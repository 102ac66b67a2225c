package tierspec

import (
	"slices"
	"testing"
)

// Every name a tier goes by resolves to it, in one Lookup.
func TestLookupResolvesAliases(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ name, want string }{
		{"hbm", "hbm"}, {"gpu", "hbm"},
		{"host", "host"}, {"cpu", "host"}, {"dram", "host"},
		{"remote", "remote"}, {"disk", "disk"},
		{"recompute", "recompute"}, {"miss", "recompute"},
	} {
		d, ok := Lookup(c.name)
		if !ok || d.Name != c.want {
			t.Errorf("Lookup(%q) = %q, %v; want %q", c.name, d.Name, ok, c.want)
		}
	}
	if _, err := Resolve("nvme"); err == nil {
		t.Error("Resolve(nvme): no error")
	}
}

// The orders the tables use: display (fastest first), the probe's
// (slowest first) and the plan's serving order.
func TestOrders(t *testing.T) {
	t.Parallel()
	var names []string
	for _, d := range All() {
		names = append(names, d.Name)
	}
	for _, c := range []struct {
		what      string
		got, want []string
	}{
		{"All", names, []string{"hbm", "host", "remote", "disk", "recompute"}},
		{"ProbeNames", ProbeNames(), []string{"miss", "remote", "cpu", "gpu"}},
		{"PlanNames", PlanNames(), []string{"hbm", "dram", "disk", "remote", "recompute"}},
		{"CapacityNames", CapacityNames(), []string{"hbm", "dram", "disk", "remote"}},
	} {
		if !slices.Equal(c.got, c.want) {
			t.Errorf("%s = %v, want %v", c.what, c.got, c.want)
		}
	}
	if Order("miss") != Order("recompute") || Order("nvme") <= Order("recompute") {
		t.Errorf("Order: miss %d, recompute %d, nvme %d", Order("miss"), Order("recompute"), Order("nvme"))
	}
	if !Computes("miss") || Computes("gpu") || Computes("nvme") {
		t.Error("Computes: only recompute (miss) computes")
	}
}

// A name two tiers would share is refused.
func TestRegisterRefusesSharedName(t *testing.T) {
	t.Parallel()
	defer func() {
		if recover() == nil {
			t.Error("a second tier called gpu was registered")
		}
	}()
	Register(Desc{Name: "toy-dup", Aliases: []string{"gpu"}})
}
