// Package replay is the kvtier replay suite: it sends a workload (a
// trace's requests or synthetic multi-turn sessions, package workload's)
// to an OpenAI-compatible server with package replayer's engine, and
// writes a row per request and one for the run, realized against
// predicted prefix-cache hits.
package replay
