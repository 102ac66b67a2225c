package probe

import (
	"github.com/kvtier/kvtier/results"
)

// File is probe.csv.
const File = "probe.csv"

// columns follow results.CommonColumns in probe.csv (backend "http",
// transport "http", tier miss | gpu | cpu | remote, seconds = TTFT).
var columns = []string{
	"endpoint",
	"producer",  // remote tier: instance A
	"connector", // nixl | mooncake
	"simulated", // true when the server said it is kvtier sim
	"request_id",
	"http_status",
	"ttft_s",
	"e2e_s",
	"prompt_tokens",
	"completion_tokens",
	"cached_tokens",       // usage.prompt_tokens_details.cached_tokens, "" absent
	"hit_tokens",          // delta of prefix_cache_hits over the request
	"external_hit_tokens", // delta of external_prefix_cache_hits
	"verified",            // true | false
	"verify_reason",       // why not verified
}

// Counted says whether an ok probe row's TTFT is a measurement of its
// tier: a hit whose tier the server's counters confirmed, or a miss they
// did not contradict.
func Counted(r results.Row) bool {
	if r.Status != results.StatusOK {
		return false
	}
	v := r.Get("verified")
	if r.Tier == "miss" {
		return v != "false"
	}
	return v == "true"
}

// Suite declares the probe's results.
var Suite = results.Suite{
	Name: "probe", Title: "HTTP four-tier TTFT", Command: "kvtier probe", Order: 20,
	Files: []results.File{{
		Name: File, Columns: columns, Keys: []string{"tier", "prefix_tokens", "endpoint"},
		Match: []string{"tier", "prefix_tokens", "simulated"}, Metric: "TTFT", Value: "ttft_s", Counts: Counted,
	}},
}

func init() { results.RegisterSuite(Suite) }
