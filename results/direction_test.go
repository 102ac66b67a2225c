package results

import (
	"slices"
	"testing"
)

func TestDirection(t *testing.T) {
	t.Parallel()
	row := func(dir string) Row {
		r := NewRow("sweep")
		if dir != "" {
			r.Set(DirectionColumn, dir)
		}
		return r
	}
	tests := []struct {
		col, want string
		load      bool
	}{
		{"", DirectionLoad, true}, // written before the column existed
		{"load", DirectionLoad, true},
		{"store", DirectionStore, false},
	}
	for _, tt := range tests {
		r := row(tt.col)
		if got := r.Direction(); got != tt.want || r.IsLoad() != tt.load {
			t.Errorf("column %q: Direction() = %q, IsLoad() = %v; want %q, %v", tt.col, got, r.IsLoad(), tt.want, tt.load)
		}
	}
	rows := []Row{row(""), row("store"), row("load")}
	rows[0].Tier, rows[1].Tier, rows[2].Tier = "a", "b", "c"
	var tiers []string
	for _, r := range Loads(rows) {
		tiers = append(tiers, r.Tier)
	}
	if !slices.Equal(tiers, []string{"a", "c"}) {
		t.Errorf("Loads kept tiers %v, want [a c]", tiers)
	}
}
