package vllmsim

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// kvBlocksPath is the producer's endpoint a consumer pulls KV through: the
// simulator's stand-in for NIXL's side channel and RDMA READ. It moves no
// data; it checks that the producer holds the blocks and hands them over.
const kvBlocksPath = "/kvtier/kv_blocks"

// kvParams are the kv_transfer_params of a request, in the NIXL shape
// (remote_block_ids, remote_engine_id, remote_host, remote_port,
// remote_request_id) or one of the Mooncake connector's three:
// bootstrap_server_host and _port; remote_bootstrap_addr (a URL or
// HOST:PORT) with remote_engine_id and remote_dp_rank; and the same with
// transfer_id, which both legs carry.
type kvParams struct {
	doRemoteDecode  bool
	doRemotePrefill bool
	blockIDs        []int
	hasBlockIDs     bool
	engineID        string
	host            string
	port            int
	requestID       string
	transferID      string
}

func parseKVParams(m map[string]any) kvParams {
	var p kvParams
	if m == nil {
		return p
	}
	p.doRemoteDecode, _ = m["do_remote_decode"].(bool)
	p.doRemotePrefill, _ = m["do_remote_prefill"].(bool)
	if ids, ok := m["remote_block_ids"].([]any); ok {
		p.hasBlockIDs = true
		for _, v := range ids {
			if f, ok := v.(float64); ok {
				p.blockIDs = append(p.blockIDs, int(f))
			}
		}
	}
	p.engineID, _ = m["remote_engine_id"].(string)
	p.requestID, _ = m["remote_request_id"].(string)
	p.transferID, _ = m["transfer_id"].(string)
	p.host, _ = m["remote_host"].(string)
	p.port = intOf(m["remote_port"])
	if h, ok := m["bootstrap_server_host"].(string); ok && p.host == "" {
		p.host = h
		p.port = intOf(m["bootstrap_server_port"])
	}
	if a, ok := m["remote_bootstrap_addr"].(string); ok && p.host == "" {
		p.host, p.port = splitAddr(a)
	}
	return p
}

// splitAddr splits "http://HOST:PORT" or "HOST:PORT".
func splitAddr(a string) (string, int) {
	if u, err := url.Parse(a); err == nil && u.Host != "" {
		a = u.Host
	}
	h, port, err := net.SplitHostPort(a)
	if err != nil {
		return "", 0
	}
	n, _ := strconv.Atoi(port)
	return h, n
}

func intOf(v any) int {
	switch x := v.(type) {
	case float64:
		return int(x)
	case string:
		n, _ := strconv.Atoi(x)
		return n
	}
	return 0
}

// addPending marks a producer request in flight under its id and its
// other names (X-Request-Id, transfer_id), so a consumer asking early
// waits for it. The returned function marks it done.
func (s *Server) addPending(id string, names ...string) func() {
	ch := make(chan struct{})
	s.pmu.Lock()
	s.pending[id] = ch
	for _, n := range names {
		if n != "" {
			s.pending[n] = ch
			s.alias[n] = id
		}
	}
	s.pmu.Unlock()
	return func() {
		s.pmu.Lock()
		for _, n := range append(names, id) {
			if n != "" && s.pending[n] == ch {
				delete(s.pending, n)
			}
		}
		s.pmu.Unlock()
		close(ch)
	}
}

// handleBootstrapQuery answers as the Mooncake connector's bootstrap
// server does, GET /query: the engine of each data-parallel rank. The
// simulator serves it on its API port, so the bootstrap address of a
// simulated producer is its own base URL.
func (s *Server) handleBootstrapQuery(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{"0": map[string]any{"engine_id": s.cfg.EngineID, "dp_rank": 0}})
}

// kvBlocksRequest is what a consumer sends its producer.
type kvBlocksRequest struct {
	RequestID  string   `json:"request_id"`  // remote_request_id, or the shared X-Request-Id
	TransferID string   `json:"transfer_id"` // Mooncake: the transfer_id both legs carry
	BlockIDs   []int    `json:"block_ids"`   // NIXL: remote_block_ids; nil for Mooncake
	EngineID   string   `json:"engine_id"`   // remote_engine_id the consumer was told
	Hashes     []string `json:"hashes"`      // the consumer's full prompt blocks, hex
}

// kvBlocksResponse says how many of the consumer's leading blocks the
// producer held and handed over.
type kvBlocksResponse struct {
	EngineID string `json:"engine_id"`
	Blocks   int    `json:"blocks"`
	Bytes    int64  `json:"bytes"`
	Reason   string `json:"reason,omitempty"`
}

// handleKVBlocks is the producer's side: find the KV kept for the request
// (waiting for it if it is still running), check the block ids and engine
// id, compare hashes with the consumer's, release the blocks.
func (s *Server) handleKVBlocks(w http.ResponseWriter, hr *http.Request) {
	q, want, aerr := s.kvRequest(w, hr)
	if aerr != nil {
		writeError(w, aerr)
		return
	}
	resp := kvBlocksResponse{EngineID: s.cfg.EngineID}
	if q.EngineID != "" && q.EngineID != s.cfg.EngineID {
		resp.Reason = fmt.Sprintf("engine id %q is not this producer's (%s)", q.EngineID, s.cfg.EngineID)
		writeJSON(w, http.StatusOK, resp)
		return
	}
	// Wait for a producer request still running.
	key := q.RequestID
	if q.TransferID != "" {
		key = q.TransferID
	}
	s.pmu.Lock()
	ch := s.pending[key]
	id := key
	if a, ok := s.alias[key]; ok {
		id = a
		delete(s.alias, key)
	}
	s.pmu.Unlock()
	if ch != nil {
		select {
		case <-ch:
		case <-hr.Context().Done():
			return
		case <-time.After(30 * time.Second):
		}
	}
	e := s.eng
	e.mu.Lock()
	held, ok := e.takeHeld(id, q.BlockIDs)
	n := 0
	switch {
	case ok:
		for n < len(held) && n < len(want) && held[n] == want[n] {
			n++
		}
	case q.TransferID != "":
		// As the Mooncake connector since its transfer ids: a prefill
		// that did not carry this transfer_id pinned nothing for it.
		resp.Reason = "no KV held for transfer_id " + q.TransferID
	case q.BlockIDs == nil:
		// Older Mooncake shapes with no kept request: whatever the
		// producer's prefix cache holds.
		n = e.gpu.contains(want)
	default:
		resp.Reason = "no KV held for request " + id + " with those block ids"
	}
	e.mu.Unlock()
	resp.Blocks = n
	resp.Bytes = int64(n) * s.cfg.Geometry.BlockBytes()
	writeJSON(w, http.StatusOK, resp)
}

// kvRequest reads a consumer's request for blocks and the hashes it
// names.
func (s *Server) kvRequest(w http.ResponseWriter, hr *http.Request) (kvBlocksRequest, []blockHash, *apiError) {
	var q kvBlocksRequest
	body, aerr := s.readBody(w, hr)
	if aerr != nil {
		return q, nil, aerr
	}
	if err := json.Unmarshal(body, &q); err != nil {
		return q, nil, badRequest("kv_blocks: %v", err)
	}
	want := make([]blockHash, 0, len(q.Hashes))
	for _, h := range q.Hashes {
		v, err := strconv.ParseUint(h, 16, 64)
		if err != nil {
			return q, nil, badRequest("kv_blocks: hash %q: %v", h, err)
		}
		want = append(want, blockHash(v))
	}
	return q, want, nil
}

// pullRemote is the consumer's side: ask the producer for the request's
// blocks. Any failure (no peer, unreachable, nothing held) is a miss: nil.
func (s *Server) pullRemote(ctx context.Context, p kvParams, xreq string, hashes []blockHash) *remoteKV {
	base := strings.TrimRight(s.cfg.KVPeer, "/")
	if base == "" && p.host != "" && p.port > 0 {
		base = "http://" + net.JoinHostPort(p.host, strconv.Itoa(p.port))
	}
	if base == "" {
		return nil
	}
	q := kvBlocksRequest{RequestID: p.requestID, EngineID: p.engineID, TransferID: p.transferID}
	if q.RequestID == "" {
		q.RequestID = xreq
	}
	if p.hasBlockIDs {
		q.BlockIDs = p.blockIDs
		if q.BlockIDs == nil {
			q.BlockIDs = []int{}
		}
	}
	for _, h := range hashes {
		q.Hashes = append(q.Hashes, strconv.FormatUint(uint64(h), 16))
	}
	body, _ := json.Marshal(q)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+kvBlocksPath, bytes.NewReader(body))
	if err != nil {
		return nil
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := s.client.Do(req)
	if err != nil {
		return nil
	}
	defer resp.Body.Close()
	var r kvBlocksResponse
	if resp.StatusCode != http.StatusOK || json.NewDecoder(io.LimitReader(resp.Body, maxAnswerBytes)).Decode(&r) != nil || r.Blocks == 0 {
		return nil
	}
	return &remoteKV{blocks: r.Blocks}
}
