// Package trace is the kvtier trace and kvtier plan suites: it analyses
// serving traces with package workload's model (AnalyzeFile) into the
// trace suite's rows (requests' lengths and footprint, the APC ceiling
// and its split, the LRU hit-ratio curve, knees, working set), and, with
// measured tier costs, plans a capacity per tier (Planner).
//
// # Tiers
//
// A Planner splits each hit by tier: with exclusive tiers (the default)
// an LRU hierarchy whose evictions demote holds the top H blocks of the
// one LRU stack in HBM, the next D in DRAM, and so on, so a block at
// distance d is served by the first tier whose cumulative capacity
// reaches d; with inclusive (write-through) tiers each tier of size S
// holds the top S blocks and the fastest holding the block serves it.
package trace
