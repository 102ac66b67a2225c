package probe

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"slices"
	"strconv"

	"github.com/kvtier/kvtier/redact"
	"github.com/kvtier/kvtier/results"
	"github.com/kvtier/kvtier/serving"
)

// The request shapes vLLM's Mooncake connector proxy has used, oldest
// first (examples/online_serving/disaggregated_serving/mooncake_connector):
const (
	// MooncakeBootstrap: the consumer gets bootstrap_server_host and
	// bootstrap_server_port (vLLM PR #24718).
	MooncakeBootstrap = "bootstrap"
	// MooncakeEngine: remote_bootstrap_addr as a URL, with the producer's
	// remote_engine_id (from its bootstrap server's GET /query) and
	// remote_dp_rank.
	MooncakeEngine = "engine"
	// MooncakeTransfer: the same plus a transfer_id both legs carry (the
	// rework of PR #31034 and after).
	MooncakeTransfer = "transfer"
	// MooncakeAuto picks by what the producer's bootstrap server answers.
	MooncakeAuto = "auto"
)

// MooncakeShapes lists the accepted values of Config.MooncakeShape.
var MooncakeShapes = []string{MooncakeAuto, MooncakeBootstrap, MooncakeEngine, MooncakeTransfer}

// A mooncake is the chosen request shape and what it needs.
type mooncake struct {
	shape, source string // source: how the shape was chosen
	addr          string // the bootstrap server, http://HOST:PORT
	host          string
	port          int
	engineID      string // engine, transfer: dp rank 0's engine id
	err           error  // why the remote tier cannot run with this shape
}

// discoverMooncake finds the producer's bootstrap server and picks the
// request shape: the flag's, else the newest shape when the bootstrap
// server answers GET /query with engine ids (a superset of the engine
// shape's keys), else the oldest.
//
// Note: the shape could also be chosen by the producer's version, but the
// releases where the proxy changed shape could not be pinned from vLLM's
// history here; what the bootstrap server answers is direct evidence.
func (p *Prober) discoverMooncake(ctx context.Context) mooncake {
	u, _ := url.Parse(p.producer.Base)
	m := mooncake{shape: p.cfg.MooncakeShape, host: u.Hostname(), port: p.cfg.BootstrapPort, source: "--mooncake-shape"}
	if m.port == 0 {
		m.port = 8998
	}
	m.addr = "http://" + net.JoinHostPort(m.host, strconv.Itoa(m.port))
	boot := &serving.Client{Base: m.addr, HTTP: p.c.HTTP, Timeout: p.cfg.Timeout, Idle: p.c.Idle}
	var ranks map[string]struct {
		EngineID string `json:"engine_id"`
	}
	_, qerr := boot.GetJSON(ctx, "/query", &ranks)
	if qerr == nil {
		if r, ok := ranks["0"]; ok && r.EngineID != "" {
			m.engineID = r.EngineID
		} else {
			qerr = errors.New("GET /query: no engine_id for data-parallel rank 0")
		}
	}
	if m.shape == "" || m.shape == MooncakeAuto {
		m.shape, m.source = MooncakeBootstrap, fmt.Sprintf("auto: bootstrap server %s did not answer GET /query (%v)", m.addr, qerr)
		if qerr == nil {
			m.shape, m.source = MooncakeTransfer, "auto: bootstrap server "+m.addr+" answered GET /query"
		}
	}
	if m.shape != MooncakeBootstrap && qerr != nil {
		m.err = fmt.Errorf("mooncake shape %s needs the producer's engine id: bootstrap server %s: %w", m.shape, m.addr, qerr)
	}
	return m
}

// params returns the kv_transfer_params of the producer's and the
// consumer's request in the chosen shape.
func (m mooncake) params(transferID string) (producer, consumer map[string]any) {
	producer = map[string]any{"do_remote_decode": true, "do_remote_prefill": false}
	consumer = map[string]any{"do_remote_decode": false, "do_remote_prefill": true}
	switch m.shape {
	case MooncakeBootstrap:
		consumer["bootstrap_server_host"] = m.host
		consumer["bootstrap_server_port"] = m.port
	default:
		consumer["remote_bootstrap_addr"] = m.addr
		consumer["remote_engine_id"] = m.engineID
		consumer["remote_dp_rank"] = 0
		if m.shape == MooncakeTransfer {
			producer["transfer_id"] = transferID
			consumer["transfer_id"] = transferID
		}
	}
	return producer, consumer
}

// measureRemote has the producer prefill the prompt and waits until it
// holds the prefix, then measures the consumer (the endpoint) pulling it:
// the row times the pull alone, with either connector.
func (p *Prober) measureRemote(ctx context.Context, row *results.Row, req serving.Request) {
	preq := req
	preq.MaxTokens = 1
	switch p.connector() {
	case "mooncake":
		m := p.info.mooncake
		row.Set("mooncake_shape", m.shape)
		if m.err != nil {
			row.Fail(m.err)
			return
		}
		preq.KVParams, req.KVParams = m.params("xfer-" + req.RequestID)
		if m.shape != MooncakeBootstrap {
			preq.Header = map[string]string{"X-data-parallel-rank": "0"}
		}
		if _, err := p.producer.Complete(ctx, preq); err != nil {
			row.Fail(fmt.Errorf("producer %s: %w", redact.URL(p.cfg.Producer), err))
			return
		}
	default:
		preq.KVParams = map[string]any{
			"do_remote_decode": true, "do_remote_prefill": false,
			"remote_engine_id": nil, "remote_block_ids": nil,
			"remote_host": nil, "remote_port": nil,
		}
		resp, err := p.producer.Complete(ctx, preq)
		if err != nil {
			row.Fail(fmt.Errorf("producer %s: %w", redact.URL(p.cfg.Producer), err))
			return
		}
		if len(resp.KVParams) == 0 {
			row.Fail(fmt.Errorf("producer %s returned no kv_transfer_params (is it a kv_producer, and did it stop on max_tokens?)", redact.URL(p.cfg.Producer)))
			return
		}
		req.KVParams = resp.KVParams
	}
	p.measured(ctx, row, p.c, req)
}

func (p *Prober) connector() string {
	if p.cfg.Connector == "" {
		return "nixl"
	}
	return p.cfg.Connector
}

func validShape(s string) bool { return s == "" || slices.Contains(MooncakeShapes, s) }
