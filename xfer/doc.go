// Package xfer is the transfer core that kvtier transfer (MB2) and kvtier
// mesh share: KV transfer bandwidth against kvtier serve peers over a
// sweep of sizes and layouts, intra- and inter-node, into host or GPU
// memory, loads and stores, plus GPU-to-GPU peer copies (Measurer); the
// options and flags that say what is moved and how (Options, Flags), the
// backends a measurement opens (OpenBackends) and the columns of its
// rows (Columns). Every sample is timed through the harness's Sampler.
// It sits below both suites, so that neither imports the other.
package xfer
