// Package report turns kvtier results directories into tables and models:
// REPORT.md with the environment, the device tier table, the HTTP
// four-tier TTFT table, the MB1 and MB2 tables, a fitted cost model per
// tier with break-even prefixes against recompute, predicted versus
// measured TTFT, run comparison with a significance test, and the
// conversion of `go test -bench` output into kvtier rows.
//
// Everything here reads the CSV files and manifest.json alone, through
// package analysis (loading, statistics, fits, provenance); it imports
// nothing from the measuring side of kvtier. Skipped and error rows are
// counted with their reasons and never turned into numbers.
package report
