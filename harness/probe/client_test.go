package probe

import (
	"slices"
	"testing"
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
			m, ok := PickModel(tc.models, tc.want)
			if m.ID != tc.id || m.MaxModelLen != tc.maxLen || ok != tc.ok {
				t.Errorf("PickModel(%q) = %+v, %v; want id %q max %d, %v", tc.want, m, ok, tc.id, tc.maxLen, tc.ok)
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
