package simtest

import (
	"net/http"
	"testing"

	"github.com/kvtier/kvtier/vllmsim"
)

func TestStartServes(t *testing.T) {
	t.Parallel()
	_, url := Start(t, vllmsim.Config{GPUBlocks: 64})
	resp, err := http.Get(url + "/health")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /health: %s", resp.Status)
	}
}
