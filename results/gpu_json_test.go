package results

import (
	"encoding/json"
	"testing"
)

// TestGPUCUDAOrdinalJSON: cuda_ordinal round-trips, -1 included, and a
// manifest written before it existed reads the GPU's index in its place,
// so older manifests' GPUs are not all named CUDA device 0.
func TestGPUCUDAOrdinalJSON(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]int{
		`{"index": 3}`:                     3,
		`{"index": 3, "cuda_ordinal": 0}`:  0,
		`{"index": 1, "cuda_ordinal": -1}`: -1,
	} {
		var g GPU
		if err := json.Unmarshal([]byte(in), &g); err != nil {
			t.Fatal(err)
		}
		if g.CUDAOrdinal != want {
			t.Errorf("%s: cuda_ordinal %d, want %d", in, g.CUDAOrdinal, want)
		}
	}
	b, err := json.Marshal(GPU{Index: 2, CUDAOrdinal: -1})
	if err != nil {
		t.Fatal(err)
	}
	var g GPU
	if err := json.Unmarshal(b, &g); err != nil || g.CUDAOrdinal != -1 || g.Index != 2 {
		t.Errorf("round trip of %s: %+v, %v", b, g, err)
	}
}
