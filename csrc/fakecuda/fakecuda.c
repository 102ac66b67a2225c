/* fakecuda.c: a stand-in libcuda.so.1 for kvtier's tests, built by the Go
 * tests with the system C compiler:
 *
 *   cc -shared -fPIC -o libcuda.so.1 fakecuda.c
 *   cc -shared -fPIC -DFAKECUDA_GETPROC_V1_ONLY -o libcuda.so.1 fakecuda.c
 *
 * Device memory is host memory; copies are memcpy on per-stream queues that
 * honour cuStreamWaitValue32 holds (queued work runs on every later API
 * call once the flag is set); events are CLOCK_MONOTONIC stamps taken when
 * the queue reaches them. Behaviour is set by the environment, read once
 * per loaded copy of the library:
 *
 *   FAKECUDA_VERSION=12080         driver version (11080: no batch copies)
 *   FAKECUDA_HIDE=a,b              symbols cuGetProcAddress does not find
 *   FAKECUDA_INIT_FAIL=1           cuInit returns CUDA_ERROR_NO_DEVICE
 *   FAKECUDA_DEVICES=1             device count
 *   FAKECUDA_NO_MEMOPS=1           CAN_USE_STREAM_MEM_OPS reads 0
 *   FAKECUDA_NO_P2P=1              cuDeviceCanAccessPeer says 0 and
 *                                  cuCtxEnablePeerAccess fails (peer
 *                                  copies still work: the driver stages)
 *   FAKECUDA_FAIL_ALLOC_AFTER=N    allocations after the first N fail
 *   FAKECUDA_FAIL_COPY_AT=N        the N-th async copy (from 0) fails
 *   FAKECUDA_CORRUPT_COPY_AT=N     the N-th async copy flips a byte
 *   FAKECUDA_QUEUE_LIMIT=1024      pending ops a blocked stream may hold;
 *                                  one more blocks the caller (5 s at most,
 *                                  then fails; a real driver would hang)
 *
 * Not a model of the GPU's speed: timings only need to be positive.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

typedef int CUresult;
typedef unsigned long long CUdeviceptr;

enum {
	OK = 0,
	E_INVALID_VALUE = 1,
	E_OUT_OF_MEMORY = 2,
	E_NOT_INITIALIZED = 3,
	E_NO_DEVICE = 100,
	E_INVALID_DEVICE = 101,
	E_INVALID_CONTEXT = 201,
	E_PEER_ACCESS_UNSUPPORTED = 217,
	E_INVALID_HANDLE = 400,
	E_NOT_FOUND = 500,
	E_NOT_READY = 600,
	E_LAUNCH_TIMEOUT = 702,
	E_PEER_ACCESS_ALREADY_ENABLED = 704,
	E_NOT_SUPPORTED = 801,
	E_UNKNOWN = 999,
};

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t once = PTHREAD_ONCE_INIT;

static struct {
	int version, init_fail, devices, no_memops, no_p2p, queue_limit;
	long fail_alloc_after, fail_copy_at, corrupt_copy_at;
	char hide[1024];
} cfg;

static int inited;
static long nallocs, ncopies;

static long envl(const char *k, long def)
{
	const char *v = getenv(k);
	return v && *v ? strtol(v, NULL, 10) : def;
}

static void configure(void)
{
	cfg.version = (int)envl("FAKECUDA_VERSION", 12080);
	cfg.init_fail = (int)envl("FAKECUDA_INIT_FAIL", 0);
	cfg.devices = (int)envl("FAKECUDA_DEVICES", 1);
	cfg.no_memops = (int)envl("FAKECUDA_NO_MEMOPS", 0);
	cfg.no_p2p = (int)envl("FAKECUDA_NO_P2P", 0);
	cfg.queue_limit = (int)envl("FAKECUDA_QUEUE_LIMIT", 1024);
	cfg.fail_alloc_after = envl("FAKECUDA_FAIL_ALLOC_AFTER", -1);
	cfg.fail_copy_at = envl("FAKECUDA_FAIL_COPY_AT", -1);
	cfg.corrupt_copy_at = envl("FAKECUDA_CORRUPT_COPY_AT", -1);
	const char *h = getenv("FAKECUDA_HIDE");
	snprintf(cfg.hide, sizeof cfg.hide, ",%s,", h ? h : "");
}

static void config(void) { pthread_once(&once, configure); }

/* ---- allocations ---- */

struct alloc {
	char *p;
	size_t n;
	int host;       /* cuMemHostAlloc or registered */
	int registered; /* cuMemHostRegister: not ours to free */
	int dev;        /* device of the context current at allocation */
	struct alloc *next;
};
static struct alloc *allocs;

static struct alloc *find(const void *p, size_t n, int host)
{
	for (struct alloc *a = allocs; a; a = a->next)
		if (a->host == host && (const char *)p >= a->p && (const char *)p + n <= a->p + a->n)
			return a;
	return NULL;
}

static int alloc_allowed(void)
{
	if (cfg.fail_alloc_after >= 0 && nallocs >= cfg.fail_alloc_after)
		return 0;
	nallocs++;
	return 1;
}

/* ---- streams and events ---- */

enum { OP_COPY, OP_EVENT, OP_WAIT };

struct event {
	int pending, done;
	struct timespec t;
};

struct op {
	int kind;
	char *dst;
	const char *src;
	size_t n;
	int corrupt;
	struct event *ev;
	volatile uint32_t *flag;
	uint32_t value;
};

struct stream {
	struct op *q;
	size_t head, len, cap;
	struct stream *next;
	int dead;
};
static struct stream *streams;

static void run_op(struct op *o)
{
	switch (o->kind) {
	case OP_COPY:
		memmove(o->dst, o->src, o->n);
		if (o->corrupt && o->n)
			o->dst[o->n / 2] ^= 0x5a;
		break;
	case OP_EVENT:
		clock_gettime(CLOCK_MONOTONIC, &o->ev->t);
		o->ev->pending = 0;
		o->ev->done = 1;
		break;
	}
}

/* drain runs queued work of s up to the first unsatisfied wait. */
static void drain(struct stream *s)
{
	while (s->head < s->len) {
		struct op *o = &s->q[s->head];
		if (o->kind == OP_WAIT && __atomic_load_n(o->flag, __ATOMIC_ACQUIRE) < o->value)
			return;
		run_op(o);
		s->head++;
	}
	s->head = s->len = 0;
}

static void drain_all(void)
{
	for (struct stream *s = streams; s; s = s->next)
		drain(s);
}

static int enqueue(struct stream *s, struct op o)
{
	if (!s) { /* the legacy stream: no queue */
		run_op(&o);
		return OK;
	}
	drain(s);
	if (s->head == s->len && o.kind != OP_WAIT) {
		run_op(&o);
		return OK;
	}
	if (s->len - s->head >= (size_t)cfg.queue_limit) {
		/* A real driver blocks the host here until the queue moves: for
		 * ever when only this host can release the hold. Wait 5 s. */
		struct timespec t0, t;
		clock_gettime(CLOCK_MONOTONIC, &t0);
		while (drain(s), s->len - s->head >= (size_t)cfg.queue_limit) {
			clock_gettime(CLOCK_MONOTONIC, &t);
			if (t.tv_sec - t0.tv_sec > 5)
				return E_UNKNOWN;
			sched_yield();
		}
	}
	if (s->len == s->cap) {
		size_t c = s->cap ? 2 * s->cap : 64;
		struct op *q = realloc(s->q, c * sizeof *q);
		if (!q)
			return E_OUT_OF_MEMORY;
		s->q = q;
		s->cap = c;
	}
	s->q[s->len++] = o;
	return OK;
}

/* wait_stream spins (lock held: the flag is written without API calls)
 * until s is empty, or gives up as a real GPU never would. */
static int wait_stream(struct stream *s)
{
	struct timespec t0, t;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		drain(s);
		if (s->head == s->len)
			return OK;
		clock_gettime(CLOCK_MONOTONIC, &t);
		if (t.tv_sec - t0.tv_sec > 2)
			return E_LAUNCH_TIMEOUT;
		sched_yield();
	}
}

#define ENTER()                         \
	config();                       \
	pthread_mutex_lock(&mu);        \
	if (!inited) {                  \
		pthread_mutex_unlock(&mu); \
		return E_NOT_INITIALIZED; \
	}                               \
	drain_all()
#define RET(r)                          \
	do {                            \
		CUresult r_ = (r);      \
		pthread_mutex_unlock(&mu); \
		return r_;              \
	} while (0)

/* ---- the API ---- */

CUresult cuDriverGetVersion(int *v)
{
	config();
	if (!v)
		return E_INVALID_VALUE;
	*v = cfg.version;
	return OK;
}

static CUresult f_cuInit(unsigned int flags)
{
	config();
	if (flags != 0)
		return E_INVALID_VALUE;
	if (cfg.init_fail)
		return E_NO_DEVICE;
	pthread_mutex_lock(&mu);
	inited = 1;
	pthread_mutex_unlock(&mu);
	return OK;
}

static const struct {
	int code;
	const char *name, *str;
} errs[] = {
	{OK, "CUDA_SUCCESS", "no error"},
	{E_INVALID_VALUE, "CUDA_ERROR_INVALID_VALUE", "invalid argument"},
	{E_OUT_OF_MEMORY, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory"},
	{E_NOT_INITIALIZED, "CUDA_ERROR_NOT_INITIALIZED", "initialization error"},
	{E_NO_DEVICE, "CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected"},
	{E_INVALID_DEVICE, "CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal"},
	{E_INVALID_CONTEXT, "CUDA_ERROR_INVALID_CONTEXT", "invalid device context"},
	{E_PEER_ACCESS_UNSUPPORTED, "CUDA_ERROR_PEER_ACCESS_UNSUPPORTED", "peer access is not supported between these two devices"},
	{E_INVALID_HANDLE, "CUDA_ERROR_INVALID_HANDLE", "invalid resource handle"},
	{E_NOT_FOUND, "CUDA_ERROR_NOT_FOUND", "named symbol not found"},
	{E_NOT_READY, "CUDA_ERROR_NOT_READY", "device not ready"},
	{E_LAUNCH_TIMEOUT, "CUDA_ERROR_LAUNCH_TIMEOUT", "the launch timed out and was terminated"},
	{E_PEER_ACCESS_ALREADY_ENABLED, "CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED", "peer access is already enabled"},
	{E_NOT_SUPPORTED, "CUDA_ERROR_NOT_SUPPORTED", "operation not supported"},
	{E_UNKNOWN, "CUDA_ERROR_UNKNOWN", "unknown error (fakecuda: stream queue full while held for 5 s)"},
};

static CUresult f_cuGetErrorName(CUresult c, const char **s)
{
	for (size_t i = 0; i < sizeof errs / sizeof errs[0]; i++)
		if (errs[i].code == c) {
			*s = errs[i].name;
			return OK;
		}
	*s = NULL;
	return E_INVALID_VALUE;
}

static CUresult f_cuGetErrorString(CUresult c, const char **s)
{
	for (size_t i = 0; i < sizeof errs / sizeof errs[0]; i++)
		if (errs[i].code == c) {
			*s = errs[i].str;
			return OK;
		}
	*s = NULL;
	return E_INVALID_VALUE;
}

static CUresult f_cuDeviceGetCount(int *n)
{
	ENTER();
	*n = cfg.devices;
	RET(OK);
}

static CUresult f_cuDeviceGet(int *d, int ord)
{
	ENTER();
	if (ord < 0 || ord >= cfg.devices)
		RET(E_INVALID_DEVICE);
	*d = ord;
	RET(OK);
}

static CUresult f_cuDeviceGetName(char *name, int len, int d)
{
	ENTER();
	if (d < 0 || d >= cfg.devices)
		RET(E_INVALID_DEVICE);
	snprintf(name, len, "Fake CUDA Device %d", d);
	RET(OK);
}

static CUresult f_cuDeviceGetPCIBusId(char *bus, int len, int d)
{
	ENTER();
	if (d < 0 || d >= cfg.devices)
		RET(E_INVALID_DEVICE);
	snprintf(bus, len, "0000:%02X:00.0", 0x19 + d);
	RET(OK);
}

static CUresult f_cuDeviceTotalMem(size_t *n, int d)
{
	ENTER();
	if (d < 0 || d >= cfg.devices)
		RET(E_INVALID_DEVICE);
	*n = (size_t)80 << 30;
	RET(OK);
}

static CUresult f_cuDeviceGetAttribute(int *v, int attr, int d)
{
	ENTER();
	if (d < 0 || d >= cfg.devices)
		RET(E_INVALID_DEVICE);
	switch (attr) {
	case 16: *v = 132; break;              /* MULTIPROCESSOR_COUNT */
	case 33: *v = 0x19 + d; break;         /* PCI_BUS_ID */
	case 34: *v = 0; break;                /* PCI_DEVICE_ID */
	case 50: *v = 0; break;                /* PCI_DOMAIN_ID */
	case 40: *v = 2; break;                /* ASYNC_ENGINE_COUNT */
	case 41: *v = 1; break;                /* UNIFIED_ADDRESSING */
	case 75: *v = 9; break;                /* COMPUTE_CAPABILITY_MAJOR */
	case 76: *v = 0; break;                /* COMPUTE_CAPABILITY_MINOR */
	case 92: *v = !cfg.no_memops; break;   /* CAN_USE_STREAM_MEM_OPS */
	case 116: *v = 1; break;               /* GPU_DIRECT_RDMA_SUPPORTED */
	case 124: *v = 1; break;               /* DMA_BUF_SUPPORTED */
	default: RET(E_INVALID_VALUE);
	}
	RET(OK);
}

static int ctx_tokens[64];
static __thread int cur_dev;

static CUresult f_cuDevicePrimaryCtxRetain(void **ctx, int d)
{
	ENTER();
	if (d < 0 || d >= cfg.devices)
		RET(E_INVALID_DEVICE);
	if (d >= 64)
		RET(E_INVALID_DEVICE);
	*ctx = &ctx_tokens[d];
	RET(OK);
}

static CUresult f_cuDevicePrimaryCtxRelease(int d)
{
	ENTER();
	RET(d < 0 || d >= cfg.devices ? E_INVALID_DEVICE : OK);
}

static CUresult f_cuCtxSetCurrent(void *ctx)
{
	ENTER();
	if (ctx == NULL)
		RET(OK);
	int *t = ctx;
	if (t < ctx_tokens || t >= ctx_tokens + cfg.devices)
		RET(E_INVALID_VALUE);
	cur_dev = (int)(t - ctx_tokens);
	RET(OK);
}

static CUresult f_cuMemGetInfo(size_t *f, size_t *t)
{
	ENTER();
	*f = (size_t)79 << 30;
	*t = (size_t)80 << 30;
	RET(OK);
}

static CUresult new_alloc(void **p, size_t n, int host)
{
	if (n == 0)
		return E_INVALID_VALUE;
	if (!alloc_allowed())
		return E_OUT_OF_MEMORY;
	void *m = NULL;
	if (!host) /* the driver maps device memory in whole pages and more */
		n = (n + 4095) & ~(size_t)4095;
	if (posix_memalign(&m, 4096, n) != 0)
		return E_OUT_OF_MEMORY;
	memset(m, 0xa5, n); /* not initialised: never what a test expects */
	struct alloc *a = calloc(1, sizeof *a);
	a->p = m;
	a->n = n;
	a->host = host;
	a->dev = cur_dev;
	a->next = allocs;
	allocs = a;
	*p = m;
	return OK;
}

static CUresult free_alloc(void *p, int host)
{
	for (struct alloc **pa = &allocs; *pa; pa = &(*pa)->next) {
		struct alloc *a = *pa;
		if (a->p == p && a->host == host && !a->registered) {
			*pa = a->next;
			free(a->p);
			free(a);
			return OK;
		}
	}
	return E_INVALID_VALUE;
}

static CUresult f_cuMemAlloc(CUdeviceptr *d, size_t n)
{
	ENTER();
	void *p = NULL;
	CUresult r = new_alloc(&p, n, 0);
	*d = (CUdeviceptr)(uintptr_t)p;
	RET(r);
}

static CUresult f_cuMemFree(CUdeviceptr d)
{
	ENTER();
	/* cuMemFree synchronises the device, held streams included. */
	for (struct stream *s = streams; s; s = s->next) {
		CUresult r = wait_stream(s);
		if (r != OK)
			RET(r);
	}
	RET(free_alloc((void *)(uintptr_t)d, 0));
}

static CUresult f_cuMemHostAlloc(void **p, size_t n, unsigned int flags)
{
	ENTER();
	if (flags & ~7u)
		RET(E_INVALID_VALUE);
	RET(new_alloc(p, n, 1));
}

static CUresult f_cuMemFreeHost(void *p)
{
	ENTER();
	RET(free_alloc(p, 1));
}

static CUresult f_cuMemHostGetDevicePointer(CUdeviceptr *d, void *p, unsigned int flags)
{
	ENTER();
	if (flags != 0 || !find(p, 1, 1))
		RET(E_INVALID_VALUE);
	*d = (CUdeviceptr)(uintptr_t)p;
	RET(OK);
}

static CUresult f_cuMemHostRegister(void *p, size_t n, unsigned int flags)
{
	ENTER();
	if (!p || n == 0 || (flags & ~0xfu) || find(p, n, 1))
		RET(E_INVALID_VALUE);
	if (!alloc_allowed())
		RET(E_OUT_OF_MEMORY);
	struct alloc *a = calloc(1, sizeof *a);
	a->p = p;
	a->n = n;
	a->host = 1;
	a->registered = 1;
	a->next = allocs;
	allocs = a;
	RET(OK);
}

static CUresult f_cuMemHostUnregister(void *p)
{
	ENTER();
	for (struct alloc **pa = &allocs; *pa; pa = &(*pa)->next) {
		struct alloc *a = *pa;
		if (a->p == p && a->registered) {
			*pa = a->next;
			free(a);
			RET(OK);
		}
	}
	RET(E_INVALID_VALUE);
}

/* check_copy validates the device sides of a copy. */
static CUresult check_copy(const void *dst, int ddev, const void *src, int sdev, size_t n)
{
	if (n == 0)
		return OK;
	if (!dst || !src)
		return E_INVALID_VALUE;
	/* Device-side addresses must lie in one allocation (device memory, or
	 * host memory mapped for the device). */
	if (ddev && !find(dst, n, 0) && !find(dst, n, 1))
		return E_INVALID_VALUE;
	if (sdev && !find(src, n, 0) && !find(src, n, 1))
		return E_INVALID_VALUE;
	return OK;
}

static CUresult f_cuMemcpyHtoD(CUdeviceptr d, const void *s, size_t n)
{
	ENTER();
	CUresult r = check_copy((void *)(uintptr_t)d, 1, s, 0, n);
	if (r == OK)
		memmove((void *)(uintptr_t)d, s, n);
	RET(r);
}

static CUresult f_cuMemcpyDtoH(void *d, CUdeviceptr s, size_t n)
{
	ENTER();
	CUresult r = check_copy(d, 0, (void *)(uintptr_t)s, 1, n);
	if (r == OK)
		memmove(d, (void *)(uintptr_t)s, n);
	RET(r);
}

static struct stream *stream_of(void *h)
{
	for (struct stream *s = streams; s; s = s->next)
		if (s == h && !s->dead)
			return s;
	return NULL;
}

/* copy_async enqueues one copy on stream h, counting it for injection. */
static CUresult copy_async(void *dst, int ddev, const void *src, int sdev, size_t n, void *h)
{
	struct stream *s = NULL;
	if (h && !(s = stream_of(h)))
		return E_INVALID_HANDLE;
	CUresult r = check_copy(dst, ddev, src, sdev, n);
	if (r != OK)
		return r;
	long i = ncopies++;
	if (i == cfg.fail_copy_at)
		return E_INVALID_VALUE;
	struct op o = {.kind = OP_COPY, .dst = dst, .src = src, .n = n, .corrupt = i == cfg.corrupt_copy_at};
	return enqueue(s, o);
}

static CUresult f_cuMemcpyHtoDAsync(CUdeviceptr d, const void *s, size_t n, void *st)
{
	ENTER();
	RET(copy_async((void *)(uintptr_t)d, 1, s, 0, n, st));
}

static CUresult f_cuMemcpyDtoHAsync(void *d, CUdeviceptr s, size_t n, void *st)
{
	ENTER();
	RET(copy_async(d, 0, (void *)(uintptr_t)s, 1, n, st));
}

static CUresult f_cuMemcpyDtoDAsync(CUdeviceptr d, CUdeviceptr s, size_t n, void *st)
{
	ENTER();
	RET(copy_async((void *)(uintptr_t)d, 1, (void *)(uintptr_t)s, 1, n, st));
}

/* ---- peer access ---- */

static int peer_on[64][64]; /* [ctx device][peer device] */

static CUresult f_cuDeviceCanAccessPeer(int *can, int d, int p)
{
	ENTER();
	if (!can)
		RET(E_INVALID_VALUE);
	if (d < 0 || d >= cfg.devices || p < 0 || p >= cfg.devices || d >= 64 || p >= 64)
		RET(E_INVALID_DEVICE);
	*can = d != p && !cfg.no_p2p;
	RET(OK);
}

static int ctx_dev(void *ctx)
{
	int *t = ctx;
	if (t < ctx_tokens || t >= ctx_tokens + cfg.devices)
		return -1;
	return (int)(t - ctx_tokens);
}

static CUresult f_cuCtxEnablePeerAccess(void *peer, unsigned int flags)
{
	ENTER();
	int p = ctx_dev(peer);
	if (flags != 0)
		RET(E_INVALID_VALUE);
	if (p < 0)
		RET(E_INVALID_CONTEXT);
	if (p == cur_dev || cfg.no_p2p)
		RET(E_PEER_ACCESS_UNSUPPORTED);
	if (peer_on[cur_dev][p])
		RET(E_PEER_ACCESS_ALREADY_ENABLED);
	peer_on[cur_dev][p] = 1;
	RET(OK);
}

/* cuMemcpyPeerAsync: the device memory must belong to the named contexts'
 * devices. Works without peer access, as the driver stages through host. */
static CUresult f_cuMemcpyPeerAsync(CUdeviceptr d, void *dctx, CUdeviceptr s, void *sctx, size_t n, void *st)
{
	ENTER();
	int dd = ctx_dev(dctx), sd = ctx_dev(sctx);
	if (dd < 0 || sd < 0)
		RET(E_INVALID_CONTEXT);
	struct alloc *da = find((void *)(uintptr_t)d, n, 0), *sa = find((void *)(uintptr_t)s, n, 0);
	if (n && (!da || !sa || da->dev != dd || sa->dev != sd))
		RET(E_INVALID_VALUE);
	RET(copy_async((void *)(uintptr_t)d, 1, (void *)(uintptr_t)s, 1, n, st));
}

typedef struct {
	int type, id;
} loc_t;
typedef struct {
	int srcAccessOrder;
	loc_t srcLocHint, dstLocHint;
	unsigned int flags;
} memcpy_attrs_t;

static CUresult batch(CUdeviceptr *dsts, CUdeviceptr *srcs, size_t *sizes, size_t count, memcpy_attrs_t *attrs,
		      size_t *attrsIdxs, size_t numAttrs, size_t *failIdx, void *st)
{
	if (failIdx)
		*failIdx = (size_t)-1;
	if (!st || !dsts || !srcs || !sizes || count == 0 || !attrs || !attrsIdxs || numAttrs == 0 ||
	    numAttrs > count || attrsIdxs[0] != 0)
		return E_INVALID_VALUE;
	for (size_t a = 0; a < numAttrs; a++) {
		if (attrs[a].srcAccessOrder < 1 || attrs[a].srcAccessOrder > 3)
			return E_INVALID_VALUE;
		loc_t l[2] = {attrs[a].srcLocHint, attrs[a].dstLocHint};
		for (int j = 0; j < 2; j++)
			if (l[j].type < 1 || l[j].type > 4 || (l[j].type == 1 && (l[j].id < 0 || l[j].id >= cfg.devices)))
				return E_INVALID_VALUE;
	}
	size_t ai = 0;
	for (size_t i = 0; i < count; i++) {
		if (ai + 1 < numAttrs && attrsIdxs[ai + 1] == i)
			ai++;
		int sdev = attrs[ai].srcLocHint.type == 1, ddev = attrs[ai].dstLocHint.type == 1;
		/* A device hint names the device that holds the memory. */
		struct alloc *sa = sdev ? find((void *)(uintptr_t)srcs[i], sizes[i], 0) : NULL;
		struct alloc *da = ddev ? find((void *)(uintptr_t)dsts[i], sizes[i], 0) : NULL;
		if ((sa && sa->dev != attrs[ai].srcLocHint.id) || (da && da->dev != attrs[ai].dstLocHint.id)) {
			if (failIdx)
				*failIdx = i;
			return E_INVALID_VALUE;
		}
		CUresult r = copy_async((void *)(uintptr_t)dsts[i], ddev, (void *)(uintptr_t)srcs[i], sdev, sizes[i], st);
		if (r != OK) {
			if (failIdx)
				*failIdx = i;
			return r;
		}
	}
	return OK;
}

/* The 12080 ABI: nine arguments, with failIdx. */
static CUresult f_cuMemcpyBatchAsync(CUdeviceptr *dsts, CUdeviceptr *srcs, size_t *sizes, size_t count,
				     memcpy_attrs_t *attrs, size_t *attrsIdxs, size_t numAttrs, size_t *failIdx, void *st)
{
	ENTER();
	RET(batch(dsts, srcs, sizes, count, attrs, attrsIdxs, numAttrs, failIdx, st));
}

/* The 13000 ABI (_v2): eight arguments, no failIdx. */
static CUresult f_cuMemcpyBatchAsync_v2(CUdeviceptr *dsts, CUdeviceptr *srcs, size_t *sizes, size_t count,
					memcpy_attrs_t *attrs, size_t *attrsIdxs, size_t numAttrs, void *st)
{
	ENTER();
	RET(batch(dsts, srcs, sizes, count, attrs, attrsIdxs, numAttrs, NULL, st));
}

static CUresult f_cuStreamCreate(void **h, unsigned int flags)
{
	ENTER();
	if (flags & ~1u)
		RET(E_INVALID_VALUE);
	struct stream *s = calloc(1, sizeof *s);
	s->next = streams;
	streams = s;
	*h = s;
	RET(OK);
}

static CUresult f_cuStreamDestroy(void *h)
{
	ENTER();
	struct stream *s = stream_of(h);
	if (!s)
		RET(E_INVALID_HANDLE);
	if (s->head != s->len)
		wait_stream(s);
	s->dead = 1; /* kept on the list so a stale handle is caught */
	free(s->q);
	s->q = NULL;
	s->cap = s->len = s->head = 0;
	RET(OK);
}

static CUresult f_cuStreamSynchronize(void *h)
{
	ENTER();
	if (!h)
		RET(OK);
	struct stream *s = stream_of(h);
	if (!s)
		RET(E_INVALID_HANDLE);
	RET(wait_stream(s));
}

static CUresult f_cuStreamWaitValue32(void *h, CUdeviceptr addr, uint32_t v, unsigned int flags)
{
	ENTER();
	struct stream *s = stream_of(h);
	if (!s)
		RET(E_INVALID_HANDLE);
	if (flags != 0 || !find((void *)(uintptr_t)addr, 4, 1))
		RET(E_INVALID_VALUE); /* only GEQ on host-mapped memory is modelled */
	struct op o = {.kind = OP_WAIT, .flag = (volatile uint32_t *)(uintptr_t)addr, .value = v};
	RET(enqueue(s, o));
}

static CUresult f_cuEventCreate(void **ev, unsigned int flags)
{
	ENTER();
	if (flags & 2) /* CU_EVENT_DISABLE_TIMING: not what kvtier asks for */
		RET(E_INVALID_VALUE);
	*ev = calloc(1, sizeof(struct event));
	RET(OK);
}

static CUresult f_cuEventRecord(void *ev, void *h)
{
	ENTER();
	struct stream *s = NULL;
	if (!ev || (h && !(s = stream_of(h))))
		RET(E_INVALID_HANDLE);
	struct event *e = ev;
	e->pending = 1;
	e->done = 0;
	struct op o = {.kind = OP_EVENT, .ev = e};
	RET(enqueue(s, o));
}

static CUresult f_cuEventSynchronize(void *ev)
{
	ENTER();
	struct event *e = ev;
	if (!e)
		RET(E_INVALID_HANDLE);
	for (struct stream *s = streams; s && e->pending; s = s->next) {
		for (size_t i = s->head; i < s->len; i++)
			if (s->q[i].kind == OP_EVENT && s->q[i].ev == e) {
				CUresult r = wait_stream(s);
				if (r != OK)
					RET(r);
				break;
			}
	}
	RET(OK);
}

static CUresult f_cuEventElapsedTime(float *ms, void *a, void *b)
{
	ENTER();
	struct event *x = a, *y = b;
	if (!x || !y)
		RET(E_INVALID_HANDLE);
	if (!x->done || !y->done)
		RET(E_NOT_READY);
	double d = (double)(y->t.tv_sec - x->t.tv_sec) * 1e3 + (double)(y->t.tv_nsec - x->t.tv_nsec) / 1e6;
	/* CUDA events resolve about half a microsecond. */
	if (d < 0.0005)
		d = 0.0005;
	*ms = (float)d;
	RET(OK);
}

static CUresult f_cuEventDestroy(void *ev)
{
	ENTER();
	if (!ev)
		RET(E_INVALID_HANDLE);
	for (struct stream *s = streams; s; s = s->next)
		for (size_t i = s->head; i < s->len; i++)
			if (s->q[i].kind == OP_EVENT && s->q[i].ev == ev)
				RET(E_INVALID_VALUE); /* still queued */
	free(ev);
	RET(OK);
}

static CUresult f_cuMemGetHandleForAddressRange(void *handle, CUdeviceptr p, size_t n, int type,
						unsigned long long flags)
{
	ENTER();
	long pg = sysconf(_SC_PAGESIZE);
	if (type != 1 || flags != 0 || p % (CUdeviceptr)pg || n % (size_t)pg || !find((void *)(uintptr_t)p, n, 0))
		RET(E_INVALID_VALUE);
	int fd = memfd_create("fakecuda-dmabuf", MFD_CLOEXEC);
	if (fd < 0)
		RET(E_UNKNOWN);
	*(int *)handle = fd;
	RET(OK);
}

/* ---- cuGetProcAddress ---- */

static const struct {
	const char *name;
	int abi; /* the version this entry's ABI starts at */
	void *fn;
} procs[] = {
#define P(name, abi) {#name, abi, (void *)f_##name}
	P(cuInit, 2000),
	P(cuGetErrorName, 6000),
	P(cuGetErrorString, 6000),
	P(cuDeviceGet, 2000),
	P(cuDeviceGetCount, 2000),
	P(cuDeviceGetName, 2000),
	P(cuDeviceGetAttribute, 2000),
	P(cuDeviceGetPCIBusId, 4010),
	P(cuDeviceTotalMem, 3020),
	P(cuDevicePrimaryCtxRetain, 7000),
	P(cuDevicePrimaryCtxRelease, 11000),
	P(cuCtxSetCurrent, 4000),
	P(cuMemGetInfo, 3020),
	P(cuMemAlloc, 3020),
	P(cuMemFree, 3020),
	P(cuMemHostAlloc, 2020),
	P(cuMemFreeHost, 2000),
	P(cuMemHostGetDevicePointer, 3020),
	P(cuMemHostRegister, 6050),
	P(cuMemHostUnregister, 4000),
	P(cuMemcpyHtoD, 3020),
	P(cuMemcpyDtoH, 3020),
	P(cuMemcpyHtoDAsync, 3020),
	P(cuMemcpyDtoHAsync, 3020),
	P(cuMemcpyDtoDAsync, 3020),
	P(cuStreamCreate, 2000),
	P(cuStreamDestroy, 4000),
	P(cuStreamSynchronize, 2000),
	P(cuStreamWaitValue32, 11070),
	P(cuEventCreate, 2000),
	P(cuEventRecord, 2000),
	P(cuEventSynchronize, 2000),
	P(cuEventElapsedTime, 2000),
	P(cuEventDestroy, 4000),
	P(cuMemGetHandleForAddressRange, 11070),
	P(cuDeviceCanAccessPeer, 4000),
	P(cuCtxEnablePeerAccess, 4000),
	P(cuMemcpyPeerAsync, 4000),
	{"cuMemcpyBatchAsync", 13000, (void *)f_cuMemcpyBatchAsync_v2},
	P(cuMemcpyBatchAsync, 12080),
#undef P
};

static int hidden(const char *name)
{
	char k[128];
	snprintf(k, sizeof k, ",%s,", name);
	return strstr(cfg.hide, k) != NULL;
}

/* lookup finds the newest ABI of name that version asks for. Status as
 * cuGetProcAddress_v2: 0 found, 1 no such symbol, 2 version too low. */
static CUresult lookup(const char *name, void **pfn, int version, int *status)
{
	config();
	*pfn = NULL;
	if (version > cfg.version) {
		*status = 2;
		return E_NOT_FOUND;
	}
	int known = 0;
	if (!hidden(name))
		for (size_t i = 0; i < sizeof procs / sizeof procs[0]; i++) {
			if (strcmp(procs[i].name, name) != 0)
				continue;
			known = 1;
			if (procs[i].abi <= version && procs[i].abi <= cfg.version) {
				*pfn = procs[i].fn;
				*status = 0;
				return OK;
			}
		}
	*status = known ? 2 : 1;
	return E_NOT_FOUND;
}

#ifndef FAKECUDA_GETPROC_V1_ONLY
CUresult cuGetProcAddress_v2(const char *name, void **pfn, int version, unsigned long long flags, int *status)
{
	int st = 0;
	CUresult r = lookup(name, pfn, version, &st);
	if (status)
		*status = st;
	(void)flags;
	return r;
}
#endif

CUresult cuGetProcAddress(const char *name, void **pfn, int version, unsigned long long flags)
{
	int st;
	(void)flags;
	return lookup(name, pfn, version, &st);
}
