// Package replayer drives an OpenAI-compatible (vLLM) server with a real
// workload — the requests of a trace, or synthetic closed-loop multi-turn
// sessions — and measures what the server realizes: per request the
// timings vllm bench serve defines (TTFT, TPOT, ITL, E2E), the tokens and
// the tokens served from the prefix cache, and the hit the trace's LRU
// model predicts at the server's capacity; per run the realized APC from
// the server's own counters (hits over queries, the external ones of a KV
// connector apart) and goodput against SLOs. The replay suite runs it
// once against a server, the knee suite once per capacity; it sits below
// both, so that no suite imports another.
//
// # Prompts
//
// Prompts are lists of token ids (POST /v1/completions) that realize the
// trace's sharing exactly: each hash id stands for a fixed block of token
// ids drawn from a generator seeded with the run's seed and the hash id,
// so two requests share exactly the blocks the trace says they share. A
// request's prompt is its blocks' tokens cut to input_length; tokens past
// its last hash id are its own. The trace's block must be a whole number
// of the server's blocks, or trace blocks would straddle server blocks;
// New refuses a workload whose block is not. max_tokens is the trace's
// output_length, capped; ignore_eos makes the server generate all of them.
//
// # Dispatch
//
// Timestamp dispatch sends each request at its trace time over the
// speedup (open loop; with a concurrency limit, a request due while the
// limit is reached waits and its dispatch time says so). Session dispatch
// runs the sessions closed loop, a number of them at once: a turn is sent
// when the previous one answered plus its think time, the trace's gap to
// its parent (which includes the parent's service time: traces do not
// record when a request finished) or a fixed think time where the trace
// has none.
//
// # Prediction
//
// The predicted hit of a request is what package workload's LRU model
// (one cache of the server's num_gpu_blocks × block_size tokens, blocks
// touched tail first as vLLM frees them) serves it, the model being fed
// the requests in the order they were sent. The model differs from the
// server in what it leaves out: blocks of requests in flight cannot be
// evicted, a hit never covers the prompt's last token, generated tokens
// fill blocks too, and a server block of a trace block may be evicted
// without the others.
package replayer
