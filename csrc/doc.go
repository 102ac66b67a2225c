// Package csrc holds kvtier's C shims, one cgo package per native
// library, each the C file and a minimal Go binding: cudawrap (the CUDA
// driver), cublaswrap (cuBLAS), ibvwrap (libibverbs), cufilewrap (cuFile,
// GPUDirect Storage) and uring (an io_uring
// read ring over the kernel's own header and raw syscalls). Packages cuda,
// rdma, diskio and system build their APIs on them. No shim needs a vendor header to build; this package's
// tests check the facts the shims declare themselves (symbol ABIs, struct
// layouts, constants) against NVIDIA's headers (golden files written by
// internal/abigen: cuda-abi.golden, cufile-abi.golden) and rdma-core's
// verbs.h. NVML is read through NVIDIA's go-nvml (package system); its
// link flags and what checks them are in docs/design.md.
package csrc
