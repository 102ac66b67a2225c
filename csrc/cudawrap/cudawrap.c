/* cudawrap.c: loads libcuda.so.1 and wraps the driver calls kvtier makes.
 * See cudawrap.h. Built by cgo as part of package cudawrap. */
#include "cudawrap.h"

typedef CUresult (*kv_getproc_v2_t)(const char *, void **, int, unsigned long long, int *);
typedef CUresult (*kv_getproc_t)(const char *, void **, int, unsigned long long);
typedef CUresult (*kv_drvver_t)(int *);

#define KV_CHECK(e, call, name)                     \
	do {                                        \
		CUresult kv_r_ = (call);            \
		if (kv_r_ != 0)                     \
			return kv_shim_fail(e, name, kv_r_); \
	} while (0)

/* kv_getproc_fallback resolves name at its KV_CUDA_FALLBACKS ABI, for a
 * driver without the ABI KV_CUDA_SYMBOLS asks for; NULL if it has none. */
static void *kv_getproc_fallback(kv_getproc_v2_t gp2, kv_getproc_t gp1, const char *name, int driver)
{
	void *p = NULL;
	int st = 0;
	CUresult r = 1;
#define KV_CUDA_FALLBACK(sym, abi, args)                                                \
	if (strcmp(name, #sym) == 0 && (abi) <= driver)                                 \
		r = gp2 ? gp2(#sym, &p, (abi), 0, &st) : gp1(#sym, &p, (abi), 0);
	KV_CUDA_FALLBACKS(KV_CUDA_FALLBACK)
#undef KV_CUDA_FALLBACK
	return r == 0 && st == 0 ? p : NULL;
}

/* kv_entry holds the driver entry points the loader finds by dlsym. */
typedef struct {
	kv_getproc_v2_t gp2;
	kv_getproc_t gp1;
	kv_drvver_t ver;
} kv_entry;

/* kv_entries finds L's driver entry points by dlsym; nonzero with e set
 * if either is missing. */
static int kv_entries(kv_cuda *L, kv_entry *ep, kv_cuda_err *e)
{
	void *lib = L->head.lib;
	ep->gp2 = (kv_getproc_v2_t)dlsym(lib, "cuGetProcAddress_v2");
	ep->gp1 = ep->gp2 ? NULL : (kv_getproc_t)dlsym(lib, "cuGetProcAddress");
	ep->ver = (kv_drvver_t)dlsym(lib, "cuDriverGetVersion");
	if ((!ep->gp2 && !ep->gp1) || !ep->ver) {
		snprintf(e->msg, sizeof e->msg, "%s: no %s (driver older than CUDA 11.3?)", L->head.path,
			 ep->ver ? "cuGetProcAddress" : "cuDriverGetVersion");
		return kv_shim_fail(e, "dlsym", KV_SHIM_ERR_NO_SYMBOL);
	}
	return 0;
}

/* kv_resolve fills L's table. A required symbol missing fails it; an
 * optional one stays NULL and its callers report unsupported. */
static int kv_resolve(kv_cuda *L, const kv_entry *ep, kv_cuda_err *e)
{
	kv_getproc_v2_t gp2 = ep->gp2;
	kv_getproc_t gp1 = ep->gp1;
#define KV_CUDA_RESOLVE(name, abi, req, args)                                                       \
	do {                                                                                          \
		void *p_ = NULL;                                                                      \
		int st_ = 0;                                                                          \
		CUresult r_ = 1;                                                                      \
		if ((abi) <= L->driver_version)                                                       \
			r_ = gp2 ? gp2(#name, &p_, (abi), 0, &st_) : gp1(#name, &p_, (abi), 0);       \
		if (r_ != 0 || st_ != 0 || !p_)                                                       \
			p_ = kv_getproc_fallback(gp2, gp1, #name, L->driver_version);                 \
		L->name = (CUresult(*) args)p_;                                                       \
		if (!p_ && (req)) {                                                                   \
			snprintf(e->msg, sizeof e->msg, "%s: required %s (ABI %d) not found (driver %d)", \
				 L->head.path, #name, (abi), L->driver_version);                          \
			return kv_shim_fail(e, #name, KV_SHIM_ERR_NO_SYMBOL);                                   \
		}                                                                                     \
	} while (0);
	KV_CUDA_SYMBOLS(KV_CUDA_RESOLVE)
#undef KV_CUDA_RESOLVE
	return 0;
}

/* kv_init runs cuInit, naming the driver's error in e if it fails. */
static int kv_init(kv_cuda *L, kv_cuda_err *e)
{
	CUresult r = L->cuInit(0);
	if (r == 0)
		return 0;
	const char *n = NULL, *m = NULL;
	if (L->cuGetErrorName(r, &n) == 0 && n)
		snprintf(e->name, sizeof e->name, "%s", n);
	if (L->cuGetErrorString(r, &m) == 0 && m)
		snprintf(e->msg, sizeof e->msg, "%s", m);
	return kv_shim_fail(e, "cuInit", r);
}

kv_cuda *kv_cuda_load(const char *path, kv_cuda_err *e)
{
	static const char *const names[] = {"libcuda.so.1", NULL};
	kv_cuda *L = kv_shim_open(path, names, "libcuda", sizeof *L, e);
	if (!L)
		return NULL;
	kv_entry ep;
	if (kv_entries(L, &ep, e) != 0)
		goto fail;
	CUresult r = ep.ver(&L->driver_version);
	if (r != 0) {
		kv_shim_fail(e, "cuDriverGetVersion", r);
		goto fail;
	}
	if (kv_resolve(L, &ep, e) != 0 || kv_init(L, e) != 0)
		goto fail;
	return L;
fail:
	free(L);
	return NULL;
}

kv_cuda_set_ctx_fn kv_cuda_set_ctx(const kv_cuda *L) { return L->cuCtxSetCurrent; }

int kv_cuda_has(const kv_cuda *L, const char *name)
{
#define KV_CUDA_HAS(sym, abi, req, args) \
	if (strcmp(name, #sym) == 0)     \
		return L->sym != NULL;
	KV_CUDA_SYMBOLS(KV_CUDA_HAS)
#undef KV_CUDA_HAS
	return 0;
}

int kv_cuda_error_name(kv_cuda *L, int code, const char **name, const char **str)
{
	*name = NULL;
	*str = NULL;
	if (L->cuGetErrorName(code, name) != 0)
		*name = NULL;
	if (L->cuGetErrorString(code, str) != 0)
		*str = NULL;
	return 0;
}

int kv_cuda_device_count(kv_cuda *L, int *n, kv_cuda_err *e)
{
	KV_CHECK(e, L->cuDeviceGetCount(n), "cuDeviceGetCount");
	return 0;
}

int kv_cuda_device_info(kv_cuda *L, int ordinal, char *name, int namelen, char *bus, int buslen,
			size_t *total, kv_cuda_err *e)
{
	CUdevice d;
	KV_CHECK(e, L->cuDeviceGet(&d, ordinal), "cuDeviceGet");
	KV_CHECK(e, L->cuDeviceGetName(name, namelen, d), "cuDeviceGetName");
	KV_CHECK(e, L->cuDeviceGetPCIBusId(bus, buslen, d), "cuDeviceGetPCIBusId");
	KV_CHECK(e, L->cuDeviceTotalMem(total, d), "cuDeviceTotalMem");
	return 0;
}

int kv_cuda_device_attr(kv_cuda *L, int ordinal, int attr, int *v, kv_cuda_err *e)
{
	CUdevice d;
	KV_CHECK(e, L->cuDeviceGet(&d, ordinal), "cuDeviceGet");
	KV_CHECK(e, L->cuDeviceGetAttribute(v, attr, d), "cuDeviceGetAttribute");
	return 0;
}

int kv_cuda_ctx_retain(kv_cuda *L, int ordinal, CUcontext *ctx, kv_cuda_err *e)
{
	CUdevice d;
	KV_CHECK(e, L->cuDeviceGet(&d, ordinal), "cuDeviceGet");
	KV_CHECK(e, L->cuDevicePrimaryCtxRetain(ctx, d), "cuDevicePrimaryCtxRetain");
	KV_CHECK(e, L->cuCtxSetCurrent(*ctx), "cuCtxSetCurrent");
	return 0;
}

int kv_cuda_ctx_release(kv_cuda *L, int ordinal, kv_cuda_err *e)
{
	CUdevice d;
	KV_CHECK(e, L->cuDeviceGet(&d, ordinal), "cuDeviceGet");
	KV_CHECK(e, L->cuDevicePrimaryCtxRelease(d), "cuDevicePrimaryCtxRelease");
	return 0;
}

/* Go moves goroutines between threads and the current context is per
 * thread: every call that needs the context makes it current first. */
#define KV_CTX(e, L, ctx) KV_CHECK(e, (L)->cuCtxSetCurrent(ctx), "cuCtxSetCurrent")

/* KV_CTX_CALL defines a shim function that makes ctx current and makes
 * one driver call, sym being the driver function's name for the error:
 * most of the shim is such functions. */
#define KV_CTX_CALL(fn, params, sym, call) \
	int fn params                      \
	{                                  \
		KV_CTX(e, L, ctx);         \
		KV_CHECK(e, call, sym);    \
		return 0;                  \
	}

KV_CTX_CALL(kv_cuda_mem_info, (kv_cuda *L, CUcontext ctx, size_t *free_b, size_t *total_b, kv_cuda_err *e),
	    "cuMemGetInfo", L->cuMemGetInfo(free_b, total_b))

KV_CTX_CALL(kv_cuda_mem_alloc, (kv_cuda *L, CUcontext ctx, size_t size, CUdeviceptr *p, kv_cuda_err *e),
	    "cuMemAlloc", L->cuMemAlloc(p, size))

KV_CTX_CALL(kv_cuda_mem_free, (kv_cuda *L, CUcontext ctx, CUdeviceptr p, kv_cuda_err *e),
	    "cuMemFree", L->cuMemFree(p))

KV_CTX_CALL(kv_cuda_addr_range, (kv_cuda *L, CUcontext ctx, CUdeviceptr p, CUdeviceptr *base, size_t *size, kv_cuda_err *e),
	    "cuMemGetAddressRange", L->cuMemGetAddressRange(base, size, p))

KV_CTX_CALL(kv_cuda_host_alloc, (kv_cuda *L, CUcontext ctx, size_t size, unsigned int flags, void **p, kv_cuda_err *e),
	    "cuMemHostAlloc", L->cuMemHostAlloc(p, size, flags))

KV_CTX_CALL(kv_cuda_host_free, (kv_cuda *L, CUcontext ctx, void *p, kv_cuda_err *e),
	    "cuMemFreeHost", L->cuMemFreeHost(p))

KV_CTX_CALL(kv_cuda_host_register, (kv_cuda *L, CUcontext ctx, void *p, size_t size, unsigned int flags, kv_cuda_err *e),
	    "cuMemHostRegister", L->cuMemHostRegister(p, size, flags))

KV_CTX_CALL(kv_cuda_host_unregister, (kv_cuda *L, CUcontext ctx, void *p, kv_cuda_err *e),
	    "cuMemHostUnregister", L->cuMemHostUnregister(p))

KV_CTX_CALL(kv_cuda_host_devptr, (kv_cuda *L, CUcontext ctx, void *p, CUdeviceptr *d, kv_cuda_err *e),
	    "cuMemHostGetDevicePointer", L->cuMemHostGetDevicePointer(d, p, 0))

KV_CTX_CALL(kv_cuda_htod, (kv_cuda *L, CUcontext ctx, CUdeviceptr dst, const void *src, size_t n, kv_cuda_err *e),
	    "cuMemcpyHtoD", L->cuMemcpyHtoD(dst, src, n))

KV_CTX_CALL(kv_cuda_dtoh, (kv_cuda *L, CUcontext ctx, void *dst, CUdeviceptr src, size_t n, kv_cuda_err *e),
	    "cuMemcpyDtoH", L->cuMemcpyDtoH(dst, src, n))

int kv_cuda_create(kv_cuda *L, CUcontext ctx, int kind, void **h, kv_cuda_err *e)
{
	KV_CTX(e, L, ctx);
	if (kind == KV_EVENT)
		KV_CHECK(e, L->cuEventCreate((CUevent *)h, KV_CU_EVENT_DEFAULT), "cuEventCreate");
	else
		KV_CHECK(e, L->cuStreamCreate((CUstream *)h, KV_CU_STREAM_NON_BLOCKING), "cuStreamCreate");
	return 0;
}

int kv_cuda_destroy(kv_cuda *L, CUcontext ctx, int kind, void *h, kv_cuda_err *e)
{
	KV_CTX(e, L, ctx);
	if (kind == KV_EVENT)
		KV_CHECK(e, L->cuEventDestroy((CUevent)h), "cuEventDestroy");
	else
		KV_CHECK(e, L->cuStreamDestroy((CUstream)h), "cuStreamDestroy");
	return 0;
}

KV_CTX_CALL(kv_cuda_stream_sync, (kv_cuda *L, CUcontext ctx, CUstream s, kv_cuda_err *e),
	    "cuStreamSynchronize", L->cuStreamSynchronize(s))

int kv_cuda_stream_wait32(kv_cuda *L, CUcontext ctx, CUstream s, CUdeviceptr flag, uint32_t v, kv_cuda_err *e)
{
	if (!L->cuStreamWaitValue32)
		return kv_shim_fail(e, "cuStreamWaitValue32", KV_SHIM_ERR_UNSUPPORTED);
	KV_CTX(e, L, ctx);
	KV_CHECK(e, L->cuStreamWaitValue32(s, flag, v, KV_CU_STREAM_WAIT_VALUE_GEQ), "cuStreamWaitValue32");
	return 0;
}

KV_CTX_CALL(kv_cuda_event_record, (kv_cuda *L, CUcontext ctx, CUevent ev, CUstream s, kv_cuda_err *e),
	    "cuEventRecord", L->cuEventRecord(ev, s))

int kv_cuda_event_elapsed(kv_cuda *L, CUcontext ctx, CUevent start, CUevent stop, float *ms, kv_cuda_err *e)
{
	KV_CTX(e, L, ctx);
	KV_CHECK(e, L->cuEventSynchronize(stop), "cuEventSynchronize");
	KV_CHECK(e, L->cuEventElapsedTime(ms, start, stop), "cuEventElapsedTime");
	return 0;
}

int kv_cuda_copy_plan(kv_cuda *L, CUcontext ctx, CUstream s, int device, int dir, int how, const uint64_t *dsts,
		      const uint64_t *srcs, const uint64_t *sizes, size_t n, size_t *done, kv_cuda_err *e)
{
	*done = 0;
	KV_CTX(e, L, ctx);
	if (how == KV_BATCH) {
		if (!L->cuMemcpyBatchAsync)
			return kv_shim_fail(e, "cuMemcpyBatchAsync", KV_SHIM_ERR_UNSUPPORTED);
		if (n == 0)
			return 0;
		kv_CUmemcpyAttributes attr;
		memset(&attr, 0, sizeof attr);
		attr.srcAccessOrder = KV_CU_MEMCPY_SRC_ACCESS_ORDER_STREAM;
		attr.srcLocHint.type = dir == KV_H2D ? KV_CU_MEM_LOCATION_TYPE_HOST : KV_CU_MEM_LOCATION_TYPE_DEVICE;
		attr.dstLocHint.type = dir == KV_D2H ? KV_CU_MEM_LOCATION_TYPE_HOST : KV_CU_MEM_LOCATION_TYPE_DEVICE;
		if (attr.srcLocHint.type == KV_CU_MEM_LOCATION_TYPE_DEVICE)
			attr.srcLocHint.id = device;
		if (attr.dstLocHint.type == KV_CU_MEM_LOCATION_TYPE_DEVICE)
			attr.dstLocHint.id = device;
		size_t idx = 0, fail = (size_t)-1;
		CUresult r = L->cuMemcpyBatchAsync((CUdeviceptr *)dsts, (CUdeviceptr *)srcs, (size_t *)sizes, n,
						   &attr, &idx, 1, &fail, s);
		if (r != 0) {
			*done = fail == (size_t)-1 ? 0 : fail;
			return kv_shim_fail(e, "cuMemcpyBatchAsync", r);
		}
		*done = n;
		return 0;
	}
	for (size_t i = 0; i < n; i++) {
		CUresult r;
		const char *op;
		switch (dir) {
		case KV_H2D:
			op = "cuMemcpyHtoDAsync";
			r = L->cuMemcpyHtoDAsync(dsts[i], (const void *)(uintptr_t)srcs[i], sizes[i], s);
			break;
		case KV_D2H:
			op = "cuMemcpyDtoHAsync";
			r = L->cuMemcpyDtoHAsync((void *)(uintptr_t)dsts[i], srcs[i], sizes[i], s);
			break;
		default:
			op = "cuMemcpyDtoDAsync";
			r = L->cuMemcpyDtoDAsync(dsts[i], srcs[i], sizes[i], s);
			break;
		}
		if (r != 0)
			return kv_shim_fail(e, op, r);
		*done = i + 1;
	}
	return 0;
}

int kv_cuda_dmabuf(kv_cuda *L, CUcontext ctx, CUdeviceptr p, size_t size, int *fd, kv_cuda_err *e)
{
	if (!L->cuMemGetHandleForAddressRange)
		return kv_shim_fail(e, "cuMemGetHandleForAddressRange", KV_SHIM_ERR_UNSUPPORTED);
	KV_CTX(e, L, ctx);
	KV_CHECK(e, L->cuMemGetHandleForAddressRange(fd, p, size, KV_CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD, 0),
		 "cuMemGetHandleForAddressRange");
	return 0;
}

int kv_cuda_can_access_peer(kv_cuda *L, int dev, int peer, int *can, kv_cuda_err *e)
{
	CUdevice d, p;
	*can = 0;
	if (!L->cuDeviceCanAccessPeer)
		return kv_shim_fail(e, "cuDeviceCanAccessPeer", KV_SHIM_ERR_UNSUPPORTED);
	KV_CHECK(e, L->cuDeviceGet(&d, dev), "cuDeviceGet");
	KV_CHECK(e, L->cuDeviceGet(&p, peer), "cuDeviceGet");
	KV_CHECK(e, L->cuDeviceCanAccessPeer(can, d, p), "cuDeviceCanAccessPeer");
	return 0;
}

int kv_cuda_enable_peer(kv_cuda *L, CUcontext ctx, CUcontext peer, kv_cuda_err *e)
{
	if (!L->cuCtxEnablePeerAccess)
		return kv_shim_fail(e, "cuCtxEnablePeerAccess", KV_SHIM_ERR_UNSUPPORTED);
	KV_CTX(e, L, ctx);
	CUresult r = L->cuCtxEnablePeerAccess(peer, 0);
	if (r != 0 && r != KV_CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED)
		return kv_shim_fail(e, "cuCtxEnablePeerAccess", r);
	return 0;
}

int kv_cuda_copy_peer(kv_cuda *L, CUcontext ctx, CUstream s, CUcontext dctx, CUcontext sctx, const uint64_t *dsts,
		      const uint64_t *srcs, const uint64_t *sizes, size_t n, size_t *done, kv_cuda_err *e)
{
	*done = 0;
	if (!L->cuMemcpyPeerAsync)
		return kv_shim_fail(e, "cuMemcpyPeerAsync", KV_SHIM_ERR_UNSUPPORTED);
	KV_CTX(e, L, ctx);
	for (size_t i = 0; i < n; i++) {
		KV_CHECK(e, L->cuMemcpyPeerAsync(dsts[i], dctx, srcs[i], sctx, sizes[i], s), "cuMemcpyPeerAsync");
		*done = i + 1;
	}
	return 0;
}

int kv_cuda_flush_gdr(kv_cuda *L, CUcontext ctx, kv_cuda_err *e)
{
	if (!L->cuFlushGPUDirectRDMAWrites)
		return kv_shim_fail(e, "cuFlushGPUDirectRDMAWrites", KV_SHIM_ERR_UNSUPPORTED);
	KV_CTX(e, L, ctx);
	KV_CHECK(e,
		 L->cuFlushGPUDirectRDMAWrites(KV_CU_FLUSH_GPU_DIRECT_RDMA_WRITES_TARGET_CURRENT_CTX,
					       KV_CU_FLUSH_GPU_DIRECT_RDMA_WRITES_TO_OWNER),
		 "cuFlushGPUDirectRDMAWrites");
	return 0;
}
