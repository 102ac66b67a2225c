package probe

import (
	"errors"
	"fmt"

	"github.com/kvtier/kvtier/results"
	"github.com/kvtier/kvtier/serving"
)

// loggedCache is a request's cached prompt tokens as the server's log
// counted them (--server-log).
type loggedCache int

// CachedTokens returns the count.
func (n loggedCache) CachedTokens() (int, bool) { return int(n), true }

// Cached returns the count and its source, the server's log.
func (n loggedCache) Cached() (int, string, bool) { return int(n), serving.SourceServerLog, true }

// unlogged is a request the server's log gave no count for, and why.
type unlogged string

// CachedTokens reports no count.
func (unlogged) CachedTokens() (int, bool) { return 0, false }

// cacheReport is what counts the request's cached prompt tokens: its
// response where it says, else the server's log (--server-log), whose
// count also fills the row's cached columns. l is the prompt's tokens
// as the server counted them.
func (p *Prober) cacheReport(row *results.Row, s *serving.Stream, l int) CacheReport {
	if _, ok := s.CachedTokens(); ok || p.cfg.ServerLog == nil {
		return s
	}
	n, why := p.cfg.ServerLog.Claim(l)
	if why != "" {
		return unlogged(why)
	}
	row.Set("cached_tokens", n)
	row.Set("cached_source", serving.SourceServerLog)
	return loggedCache(n)
}

// noCounters rewords why the server's counters could not be read in its
// family's terms, for a family that has none: "Ollama reports no cached
// tokens", with what the server log said or how to have it say.
func (p *Prober) noCounters(merr error, r CacheReport) error {
	t := p.info.Family.Traits()
	if t.Metrics != "" {
		return merr
	}
	msg := fmt.Sprintf("%s reports no cached tokens (no /metrics; in its responses: %s)", t.Title, t.Cached)
	switch {
	case p.cfg.ServerLog != nil:
		if why, ok := r.(unlogged); ok {
			msg += ": " + string(why)
		}
	case t.CacheLog != "":
		msg += ": start it with " + t.CacheLog + " and give its log with --server-log"
	}
	return errors.New(msg)
}
