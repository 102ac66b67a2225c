// Package csrc holds kvtier's C shims, one cgo package per native
// library, each the C file and a minimal Go binding: cudawrap (the CUDA
// driver), cublaswrap (cuBLAS) and ibvwrap (libibverbs). Packages cuda and
// rdma build their APIs on them. No shim needs a vendor header to build;
// this package's tests check the facts the shims declare themselves
// (symbol ABIs, struct layouts, constants) against NVIDIA's headers (a
// golden file written by internal/abigen) and rdma-core's verbs.h.
package csrc
