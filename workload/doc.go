// Package workload is the model of an LLM serving workload that the
// trace, plan, replay and knee suites share: it reads serving traces
// into requests (Reader), writes synthetic ones (Generate, GenFlags),
// and computes, in one streaming pass, what a prefix cache of any size
// would have served (Analyzer): the requests' lengths and KV footprint,
// the APC ceiling of an infinite cache and its split into intra-session,
// cross-session and shared-prefix reuse, the exact LRU prefix hit ratio
// at every capacity (for one cache or n behind a router, Curve) and the
// working set per sliding window. It sits below the suites, which import
// no suite.
//
// # Formats
//
// Two JSON-lines formats, told apart by their fields: the Mooncake
// FAST'25 release (timestamp in ms, input_length, output_length,
// hash_ids of 512-token blocks) and the Alibaba/Bailian style (chat_id,
// parent_chat_id, timestamp in s, input_length, output_length, type,
// turn, hash_ids of 16-token blocks, optional session_id). Files may be
// gzip-compressed. Malformed lines are skipped, counted and kept with
// their line numbers.
//
// # Order
//
// Requests are analysed in timestamp order, file order for ties. The
// Reader streams: it holds a window of Options.Reorder requests in a heap
// and hands out the earliest, so a line displaced by up to the window is
// put in place; a line earlier than a request already handed out is an
// error naming it (sort the trace or widen the window). Nothing else of a
// request is kept once it is analysed, so memory grows with the distinct
// blocks, not with the file.
//
// # The cache model
//
// A cache of C blocks (a capacity of C tokens is ⌊C/B⌋ blocks) is
// looked up when a request arrives, all of its blocks before any is
// touched; the hit is the leading run of blocks present; then every block
// of the request is touched in order (TouchForward: the last ends most
// recent; TouchReverse: the first does, as vLLM frees a request's blocks
// tail first). Block k holds min(B, input_length − k·B) tokens.
//
// An LRU cache of C blocks holds exactly the C most recently used
// distinct blocks, so block k is present iff its stack distance d_k (one
// plus the distinct blocks referenced since its last reference; ∞ if
// never referenced) is at most C. Block k is in the leading run iff
// blocks 0..k are all present, i.e. iff m_k = max(d_0..d_k) ≤ C. The hit
// tokens at capacity C are therefore Σ tokens_k over m_k ≤ C, and one
// histogram of tokens by m_k, accumulated in prefix sums, gives the hit
// of every capacity at once. Stack distances come from a Fenwick tree
// over reference slots (a slot is 1 while it is some block's latest
// reference), O(log n) per lookup and touch, with the slots renumbered
// when they run out so the tree stays within twice the distinct blocks.
// The test checks the curve against a plain request-by-request LRU.
//
// # Sampling
//
// Exact analysis keeps state per distinct block. For traces whose
// distinct blocks do not fit in memory, AnalyzeOptions.Sample turns on
// SHARDS (Waldspurger et al., FAST'15): a block is tracked iff a 64-bit
// mix of its id and a key drawn from the seed falls below rate × 2^24
// (so no id is always sampled and another seed draws another sample),
// distances are scaled by 1/rate, and hit ratios are sampled hits over
// sampled tokens. A hash id that opens a request (block 0: the Mooncake
// traces open every request with id 0) is tracked exactly instead,
// weighted as one block and its tokens once: the sample would otherwise
// hold it or not, and shift the whole curve by its share either way. The
// sample is split into 8 hash-partitioned sub-samples analysed
// independently; the spread of their token-weighted ratios and the
// curve's rise over one sub-sample slot give each capacity's band
// (Curve.Band: Student's t for 7 degrees of freedom times the standard
// error of the ratio, plus that rise), and the widest band is the stated
// error bound. The leading
// run is judged on sampled blocks only. The bound sees what the sample
// holds: a shared prompt referenced by a large share of requests and
// missed by every sub-sample shifts the curve unseen.
package workload
