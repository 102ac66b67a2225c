package workload

import "math"

// A Format is a trace file format, told apart by the fields of its lines.
type Format string

// The trace formats kvtier reads.
const (
	// Mooncake is the FAST'25 Mooncake release: one JSON object per line
	// with timestamp (ms), input_length, output_length and hash_ids
	// (512-token blocks). kvtier's generator adds session_id and turn,
	// which other readers ignore.
	Mooncake Format = "mooncake"
	// Alibaba is the Alibaba/Bailian style: chat_id, parent_chat_id,
	// timestamp (s), input_length, output_length, type, turn, hash_ids
	// (16-token blocks) and an optional session_id.
	Alibaba Format = "alibaba"
)

// DefaultBlockTokens returns the tokens per hash id of the format: 512 for
// Mooncake, 16 for Alibaba.
func (f Format) DefaultBlockTokens() int {
	if f == Mooncake {
		return 512
	}
	return 16
}

// A Request is one request of a trace, as the Reader hands it out: in
// timestamp order (file order for ties), with its session and parent
// resolved.
type Request struct {
	Index   int    // position in timestamp order, from 0
	Line    int    // line of the file it came from, from 1
	ID      string // chat_id; the line number where the format has none
	Session int    // dense session number, from 0
	Parent  int    // Index of the parent request; -1 when it has none
	Turn    int    // turn within the session, from 1
	// Sessioned says the session comes from the trace (a session_id or a
	// parent_chat_id chain); false: the trace has none and every request
	// is a session of its own.
	Sessioned bool
	Time      float64
	// Think is the trace's gap from the parent's arrival to this one's,
	// in seconds; NaN without a parent. Traces do not record when the
	// parent finished, so the gap includes the parent's service time.
	Think  float64
	Input  int    // input_length, tokens
	Output int    // output_length, tokens
	Type   string // the Alibaba type field, "" otherwise
	// Hashes are the prefix-block hash ids: block k holds tokens
	// [k·B, min((k+1)·B, Input)), so the last one may be partial. Equal
	// ids are shareable KV. A trace may give fewer ids than blocks; the
	// tokens past the last id are then unique to the request.
	Hashes      []uint64
	BlockTokens int // B
}

// Blocks returns the number of KV blocks the request's input fills:
// ceil(Input/B).
func (r *Request) Blocks() int { return (r.Input + r.BlockTokens - 1) / r.BlockTokens }

// BlockTokensAt returns the tokens block k holds: min(B, Input − k·B).
func (r *Request) BlockTokensAt(k int) int {
	return min(r.BlockTokens, r.Input-k*r.BlockTokens)
}

// HashedTokens returns the input tokens covered by the hash ids.
func (r *Request) HashedTokens() int {
	return min(r.Input, len(r.Hashes)*r.BlockTokens)
}

// HasParent reports whether the request continues an earlier one.
func (r *Request) HasParent() bool { return r.Parent >= 0 }

var nan = math.NaN()
