/* cudawrap.h: the CUDA driver API kvtier uses, loaded at run time.
 *
 * No cuda.h: the few driver types are declared here. libcuda.so.1 is
 * dlopen'd; only cuGetProcAddress(_v2) and cuDriverGetVersion are found by
 * dlsym, every other function through cuGetProcAddress at the ABI version
 * written beside it in KV_CUDA_SYMBOLS (the one symbol list: it is expanded
 * for the table, the loader and the ABI facts test). The constants and
 * struct fields the shim relies on are listed once too (KV_CUDA_CONSTANTS,
 * KV_CUDA_FIELDS), so the test in csrc can print the shim's own view of
 * them and compare it with facts extracted from NVIDIA's headers.
 *
 * Every shim function returns 0 or a raw CUresult and fills a kv_cuda_err
 * with the operation that failed. Nothing here prints or retries, and a
 * loaded library is never closed (no dlclose: unloading a driver whose
 * threads are alive is not safe).
 */
#ifndef KVTIER_CUDAWRAP_H
#define KVTIER_CUDAWRAP_H

#include <stddef.h>
#include <stdint.h>

#include "../shim/shim.h"

typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
typedef struct CUctx_st *CUcontext;
typedef struct CUstream_st *CUstream;
typedef struct CUevent_st *CUevent;

/* CUmemLocation and CUmemcpyAttributes as in CUDA 12.8 to 13.0. */
typedef struct {
	int type; /* CU_MEM_LOCATION_TYPE_DEVICE = 1, _HOST = 2 */
	int id;
} kv_CUmemLocation;

typedef struct {
	int srcAccessOrder; /* CU_MEMCPY_SRC_ACCESS_ORDER_STREAM = 1 */
	kv_CUmemLocation srcLocHint;
	kv_CUmemLocation dstLocHint;
	unsigned int flags;
} kv_CUmemcpyAttributes;

/* X(struct, field): every field of the structs above, for the ABI test. */
#define KV_CUDA_FIELDS(X)                         \
	X(CUmemLocation, type)                    \
	X(CUmemLocation, id)                      \
	X(CUmemcpyAttributes, srcAccessOrder)     \
	X(CUmemcpyAttributes, srcLocHint)         \
	X(CUmemcpyAttributes, dstLocHint)         \
	X(CUmemcpyAttributes, flags)

/* X(name, value): the driver constants the shim and package cuda use, by
 * their names in cuda.h; each becomes KV_<name>. */
#define KV_CUDA_CONSTANTS(X)                                      \
	X(CUDA_ERROR_NOT_FOUND, 500)                              \
	X(CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED, 704)            \
	X(CUDA_ERROR_NOT_SUPPORTED, 801)                          \
	X(CU_MEMHOSTALLOC_PORTABLE, 0x01)                         \
	X(CU_MEMHOSTALLOC_DEVICEMAP, 0x02)                        \
	X(CU_MEMHOSTREGISTER_PORTABLE, 0x01)                      \
	X(CU_MEMHOSTREGISTER_DEVICEMAP, 0x02)                     \
	X(CU_STREAM_NON_BLOCKING, 0x01)                           \
	X(CU_EVENT_DEFAULT, 0x00)                                 \
	X(CU_STREAM_WAIT_VALUE_GEQ, 0x00)                         \
	X(CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD, 0x1)               \
	X(CU_MEMCPY_SRC_ACCESS_ORDER_STREAM, 1)                   \
	X(CU_MEM_LOCATION_TYPE_DEVICE, 1)                         \
	X(CU_MEM_LOCATION_TYPE_HOST, 2)                           \
	X(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, 16)           \
	X(CU_DEVICE_ATTRIBUTE_PCI_BUS_ID, 33)                     \
	X(CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID, 34)                  \
	X(CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT, 40)             \
	X(CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING, 41)             \
	X(CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID, 50)                  \
	X(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, 75)       \
	X(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, 76)       \
	X(CU_DEVICE_ATTRIBUTE_CAN_USE_STREAM_MEM_OPS_V1, 92)      \
	X(CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_SUPPORTED, 116)     \
	X(CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED, 124)            \
	X(CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_WRITES_ORDERING, 118) \
	X(CU_GPU_DIRECT_RDMA_WRITES_ORDERING_NONE, 0)             \
	X(CU_FLUSH_GPU_DIRECT_RDMA_WRITES_TARGET_CURRENT_CTX, 0)  \
	X(CU_FLUSH_GPU_DIRECT_RDMA_WRITES_TO_OWNER, 100)

#define KV_CUDA_ENUM(name, value) KV_##name = (value),
enum { KV_CUDA_CONSTANTS(KV_CUDA_ENUM) };
#undef KV_CUDA_ENUM

/* Loader failures are shim.h's KV_SHIM_ERR_* codes, outside the CUresult
 * range. */
enum { KV_CUDA_SUCCESS = 0 };

/* X(name, abi version, required, parameter list). Ask for the base name at
 * the version whose ABI is declared: cuMemAlloc at 3020 is cuMemAlloc_v2,
 * cuMemcpyBatchAsync at 12080 is the 9-argument form with failIdx (CUDA 13
 * headers map the name to an 8-argument _v2 at 13000). */
#define KV_CUDA_SYMBOLS(X) \
	X(cuGetErrorName, 6000, 1, (CUresult, const char **)) \
	X(cuGetErrorString, 6000, 1, (CUresult, const char **)) \
	X(cuInit, 2000, 1, (unsigned int)) \
	X(cuDeviceGet, 2000, 1, (CUdevice *, int)) \
	X(cuDeviceGetCount, 2000, 1, (int *)) \
	X(cuDeviceGetName, 2000, 1, (char *, int, CUdevice)) \
	X(cuDeviceGetAttribute, 2000, 1, (int *, int, CUdevice)) \
	X(cuDeviceGetPCIBusId, 4010, 1, (char *, int, CUdevice)) \
	X(cuDeviceTotalMem, 3020, 1, (size_t *, CUdevice)) \
	X(cuDevicePrimaryCtxRetain, 7000, 1, (CUcontext *, CUdevice)) \
	X(cuDevicePrimaryCtxRelease, 11000, 1, (CUdevice)) \
	X(cuCtxSetCurrent, 4000, 1, (CUcontext)) \
	X(cuMemGetInfo, 3020, 1, (size_t *, size_t *)) \
	X(cuMemAlloc, 3020, 1, (CUdeviceptr *, size_t)) \
	X(cuMemFree, 3020, 1, (CUdeviceptr)) \
	X(cuMemGetAddressRange, 3020, 1, (CUdeviceptr *, size_t *, CUdeviceptr)) \
	X(cuMemHostAlloc, 2020, 1, (void **, size_t, unsigned int)) \
	X(cuMemFreeHost, 2000, 1, (void *)) \
	X(cuMemHostGetDevicePointer, 3020, 1, (CUdeviceptr *, void *, unsigned int)) \
	X(cuMemHostRegister, 6050, 1, (void *, size_t, unsigned int)) \
	X(cuMemHostUnregister, 4000, 1, (void *)) \
	X(cuMemcpyHtoD, 3020, 1, (CUdeviceptr, const void *, size_t)) \
	X(cuMemcpyDtoH, 3020, 1, (void *, CUdeviceptr, size_t)) \
	X(cuMemcpyHtoDAsync, 3020, 1, (CUdeviceptr, const void *, size_t, CUstream)) \
	X(cuMemcpyDtoHAsync, 3020, 1, (void *, CUdeviceptr, size_t, CUstream)) \
	X(cuMemcpyDtoDAsync, 3020, 1, (CUdeviceptr, CUdeviceptr, size_t, CUstream)) \
	X(cuStreamCreate, 2000, 1, (CUstream *, unsigned int)) \
	X(cuStreamDestroy, 4000, 1, (CUstream)) \
	X(cuStreamSynchronize, 2000, 1, (CUstream)) \
	X(cuEventCreate, 2000, 1, (CUevent *, unsigned int)) \
	X(cuEventRecord, 2000, 1, (CUevent, CUstream)) \
	X(cuEventSynchronize, 2000, 1, (CUevent)) \
	X(cuEventElapsedTime, 12080, 1, (float *, CUevent, CUevent)) \
	X(cuEventDestroy, 4000, 1, (CUevent)) \
	X(cuStreamWaitValue32, 11070, 0, (CUstream, CUdeviceptr, uint32_t, unsigned int)) \
	X(cuMemGetHandleForAddressRange, 11070, 0, (void *, CUdeviceptr, size_t, int, unsigned long long)) \
	X(cuMemcpyBatchAsync, 12080, 0, (CUdeviceptr *, CUdeviceptr *, size_t *, size_t, kv_CUmemcpyAttributes *, size_t *, size_t, size_t *, CUstream)) \
	X(cuDeviceCanAccessPeer, 4000, 0, (int *, CUdevice, CUdevice)) \
	X(cuCtxEnablePeerAccess, 4000, 0, (CUcontext, unsigned int)) \
	X(cuMemcpyPeerAsync, 4000, 0, (CUdeviceptr, CUcontext, CUdeviceptr, CUcontext, size_t, CUstream)) \
	X(cuFlushGPUDirectRDMAWrites, 11030, 0, (int, int))

/* X(name, abi version, parameter list): an older ABI of a symbol above,
 * asked for when the driver lacks the listed one (a driver older than
 * it). The parameters must be the same. cuEventElapsedTime at 12080 is
 * the _v2 entry 12.8+ drivers offer; older ones have only the first. */
#define KV_CUDA_FALLBACKS(X) \
	X(cuEventElapsedTime, 2000, (float *, CUevent, CUevent))

/* A kv_cuda is one loaded libcuda: its handle and its function table. */
typedef struct kv_cuda {
	kv_shim_lib head; /* the library and the path that opened */
	int driver_version;
#define KV_CUDA_FIELD(name, ver, req, args) CUresult (*name) args;
	KV_CUDA_SYMBOLS(KV_CUDA_FIELD)
#undef KV_CUDA_FIELD
} kv_cuda;

/* A kv_cuda_err says which operation failed and how: code is a raw
 * CUresult or a KV_SHIM_ERR_* loader code, name the CUresult's name when
 * the loader could ask. */
typedef kv_shim_err kv_cuda_err;

/* kv_cuda_set_ctx_fn is how another shim (cuBLAS) makes a context current
 * in the same C call as its own work: kv_cuda_set_ctx(L) returns the
 * loaded cuCtxSetCurrent. */
typedef CUresult (*kv_cuda_set_ctx_fn)(CUcontext);
kv_cuda_set_ctx_fn kv_cuda_set_ctx(const kv_cuda *L);

/* Directions of a copy plan. */
enum { KV_H2D = 0, KV_D2H = 1, KV_D2D = 2 };
/* Ways of issuing a plan. */
enum { KV_PERCOPY = 0, KV_BATCH = 1 };

/* kv_cuda_load opens path ("" or NULL: libcuda.so.1), resolves the table
 * and runs cuInit. A library that fails to load stays open (no dlclose). */
kv_cuda *kv_cuda_load(const char *path, kv_cuda_err *e);
int kv_cuda_has(const kv_cuda *L, const char *name);

int kv_cuda_error_name(kv_cuda *L, int code, const char **name, const char **str);
int kv_cuda_device_count(kv_cuda *L, int *n, kv_cuda_err *e);
int kv_cuda_device_info(kv_cuda *L, int ordinal, char *name, int namelen, char *bus, int buslen,
			size_t *total, kv_cuda_err *e);
int kv_cuda_device_attr(kv_cuda *L, int ordinal, int attr, int *v, kv_cuda_err *e);
int kv_cuda_ctx_retain(kv_cuda *L, int ordinal, CUcontext *ctx, kv_cuda_err *e);
int kv_cuda_ctx_release(kv_cuda *L, int ordinal, kv_cuda_err *e);
int kv_cuda_mem_info(kv_cuda *L, CUcontext ctx, size_t *free_b, size_t *total_b, kv_cuda_err *e);

int kv_cuda_mem_alloc(kv_cuda *L, CUcontext ctx, size_t size, CUdeviceptr *p, kv_cuda_err *e);
int kv_cuda_mem_free(kv_cuda *L, CUcontext ctx, CUdeviceptr p, kv_cuda_err *e);
/* kv_cuda_addr_range returns the allocation that holds p. */
int kv_cuda_addr_range(kv_cuda *L, CUcontext ctx, CUdeviceptr p, CUdeviceptr *base, size_t *size, kv_cuda_err *e);
int kv_cuda_host_alloc(kv_cuda *L, CUcontext ctx, size_t size, unsigned int flags, void **p, kv_cuda_err *e);
int kv_cuda_host_free(kv_cuda *L, CUcontext ctx, void *p, kv_cuda_err *e);
int kv_cuda_host_register(kv_cuda *L, CUcontext ctx, void *p, size_t size, unsigned int flags, kv_cuda_err *e);
int kv_cuda_host_unregister(kv_cuda *L, CUcontext ctx, void *p, kv_cuda_err *e);
int kv_cuda_host_devptr(kv_cuda *L, CUcontext ctx, void *p, CUdeviceptr *d, kv_cuda_err *e);
int kv_cuda_htod(kv_cuda *L, CUcontext ctx, CUdeviceptr dst, const void *src, size_t n, kv_cuda_err *e);
int kv_cuda_dtoh(kv_cuda *L, CUcontext ctx, void *dst, CUdeviceptr src, size_t n, kv_cuda_err *e);

/* Kinds of driver object kv_cuda_create makes and kv_cuda_destroy
 * releases. */
enum { KV_STREAM = 0, KV_EVENT = 1 };
/* kv_cuda_create makes a non-blocking stream (KV_STREAM) or a timing
 * event (KV_EVENT) in ctx; kv_cuda_destroy releases one. */
int kv_cuda_create(kv_cuda *L, CUcontext ctx, int kind, void **h, kv_cuda_err *e);
int kv_cuda_destroy(kv_cuda *L, CUcontext ctx, int kind, void *h, kv_cuda_err *e);
int kv_cuda_stream_sync(kv_cuda *L, CUcontext ctx, CUstream s, kv_cuda_err *e);
int kv_cuda_stream_wait32(kv_cuda *L, CUcontext ctx, CUstream s, CUdeviceptr flag, uint32_t v, kv_cuda_err *e);

int kv_cuda_event_record(kv_cuda *L, CUcontext ctx, CUevent ev, CUstream s, kv_cuda_err *e);
int kv_cuda_event_elapsed(kv_cuda *L, CUcontext ctx, CUevent start, CUevent stop, float *ms, kv_cuda_err *e);

/* kv_cuda_copy_plan enqueues n copies dsts[i] <- srcs[i] of sizes[i] bytes
 * on s, one driver call per copy (KV_PERCOPY) or one cuMemcpyBatchAsync
 * (KV_BATCH, with location hints: host, or device ordinal device). Addresses
 * are device pointers or host addresses as dir says. The arrays are the
 * caller's C memory. *done is the number of copies issued before an error. */
int kv_cuda_copy_plan(kv_cuda *L, CUcontext ctx, CUstream s, int device, int dir, int how, const uint64_t *dsts,
		      const uint64_t *srcs, const uint64_t *sizes, size_t n, size_t *done, kv_cuda_err *e);

/* kv_cuda_can_access_peer sets *can to whether device dev can address
 * device peer's memory directly (cuDeviceCanAccessPeer). */
int kv_cuda_can_access_peer(kv_cuda *L, int dev, int peer, int *can, kv_cuda_err *e);
/* kv_cuda_enable_peer lets ctx address peer's memory; already enabled is
 * success. */
int kv_cuda_enable_peer(kv_cuda *L, CUcontext ctx, CUcontext peer, kv_cuda_err *e);
/* kv_cuda_copy_peer enqueues n copies dsts[i] (in dctx) <- srcs[i] (in
 * sctx) with cuMemcpyPeerAsync on s, a stream of ctx. *done as for
 * kv_cuda_copy_plan. */
int kv_cuda_copy_peer(kv_cuda *L, CUcontext ctx, CUstream s, CUcontext dctx, CUcontext sctx, const uint64_t *dsts,
		      const uint64_t *srcs, const uint64_t *sizes, size_t n, size_t *done, kv_cuda_err *e);

/* kv_cuda_dmabuf exports [p, p+size) as a DMA-BUF fd; p and size must be
 * page aligned and inside one allocation. */
int kv_cuda_dmabuf(kv_cuda *L, CUcontext ctx, CUdeviceptr p, size_t size, int *fd, kv_cuda_err *e);

/* kv_cuda_flush_gdr makes the NIC's GPUDirect RDMA writes to ctx's device
 * so far visible to ctx's later work (cuFlushGPUDirectRDMAWrites, target
 * the current context, scope its owner). */
int kv_cuda_flush_gdr(kv_cuda *L, CUcontext ctx, kv_cuda_err *e);

#endif
