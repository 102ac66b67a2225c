// Package report turns kvtier results directories into REPORT.md and
// REPORT.html: a title, the headline, the environment said once, a
// section per suite with its figures, the parts that read several suites,
// the suites not run and an index of figures; and run comparison with a
// significance test. It is an engine: each suite registers its section,
// headline and closing parts from its own package (RegisterSection,
// RegisterHeadline, RegisterClosing) and writes them with the tables and
// formatting here; a suite that registers none gets its summary table and
// a summary line. It names no suite.
//
// Everything here reads the CSV files and manifest.json alone, through
// package analysis (loading, statistics, fits, provenance); it imports
// nothing from the measuring side of kvtier. Skipped and error rows are
// counted with their reasons and never turned into numbers.
package report
