/* cufilewrap.c: loads libcufile and wraps the cuFile calls kvtier makes.
 * See cufilewrap.h. Built by cgo as part of package cufilewrap. */
#include "cufilewrap.h"

#include <errno.h>

/* kv_fail records that op failed with code, nothing else. */
static int kv_fail(kv_cufile_err *e, const char *op, int code)
{
	kv_shim_clear(e);
	return kv_shim_fail(e, op, code);
}

/* kv_status turns a returned CUfileError_t into the shim's code. */
static int kv_status(kv_cufile_err *e, const char *op, kv_CUfileError_t s)
{
	if (s.err == KV_CU_FILE_SUCCESS)
		return 0;
	kv_fail(e, op, s.err);
	e->cu_err = s.cu_err;
	return s.err;
}

static int kv_ctx(kv_cufile_set_ctx_fn set, uint64_t ctx, kv_cufile_err *e)
{
	if (!set)
		return 0;
	int r = set((void *)(uintptr_t)ctx);
	if (r != 0) {
		kv_fail(e, "cuCtxSetCurrent", KV_CUFILE_ERR_CONTEXT);
		e->cu_err = r;
		return KV_CUFILE_ERR_CONTEXT;
	}
	return 0;
}

kv_cufile *kv_cufile_load(const char *path, kv_cufile_err *e)
{
	static const char *const names[] = {"libcufile.so.0", "libcufile.so", NULL};
	kv_cufile *L = kv_shim_open(path, names, "libcufile", sizeof *L, e);
	if (!L)
		return NULL;
#define KV_CUFILE_RESOLVE(name, sym, req, ret, args)                                 \
	do {                                                                         \
		const char *s_ = sym;                                                \
		void *p_ = dlsym(L->head.lib, s_);                                   \
		if (!p_ && strcmp(s_, #name) != 0)                                   \
			p_ = dlsym(L->head.lib, s_ = #name);                         \
		L->name = (ret(*) args)p_;                                           \
		if (p_ && strcmp(#name, "cuFileDriverClose") == 0)                   \
			snprintf(L->close_symbol, sizeof L->close_symbol, "%s", s_); \
		if (!p_ && (req))                                                    \
			return kv_shim_missing(L, sym, NULL, e);                     \
	} while (0);
	KV_CUFILE_SYMBOLS(KV_CUFILE_RESOLVE)
#undef KV_CUFILE_RESOLVE
	return L;
}

int kv_cufile_driver_open(kv_cufile *L, kv_cufile_set_ctx_fn set, uint64_t ctx, kv_cufile_err *e)
{
	if (kv_ctx(set, ctx, e))
		return e->code;
	return kv_status(e, "cuFileDriverOpen", L->cuFileDriverOpen());
}

int kv_cufile_driver_close(kv_cufile *L, kv_cufile_err *e)
{
	return kv_status(e, "cuFileDriverClose", L->cuFileDriverClose());
}

int kv_cufile_driver_props(kv_cufile *L, unsigned *major, unsigned *minor, unsigned *status, unsigned *control,
			   kv_cufile_err *e)
{
	if (!L->cuFileDriverGetProperties)
		return kv_fail(e, "cuFileDriverGetProperties", KV_SHIM_ERR_UNSUPPORTED);
	kv_CUfileDrvProps_t p;
	memset(&p, 0, sizeof p);
	int r = kv_status(e, "cuFileDriverGetProperties", L->cuFileDriverGetProperties(&p));
	if (r)
		return r;
	*major = p.nvfs.major_version;
	*minor = p.nvfs.minor_version;
	*status = p.nvfs.dstatusflags;
	*control = p.nvfs.dcontrolflags;
	return 0;
}

int kv_cufile_handle_register(kv_cufile *L, int fd, kv_CUfileHandle_t *h, kv_cufile_err *e)
{
	kv_CUfileDescr_t d;
	memset(&d, 0, sizeof d);
	d.type = KV_CU_FILE_HANDLE_TYPE_OPAQUE_FD;
	d.handle.fd = fd;
	return kv_status(e, "cuFileHandleRegister", L->cuFileHandleRegister(h, &d));
}

void kv_cufile_handle_deregister(kv_cufile *L, kv_CUfileHandle_t h) { L->cuFileHandleDeregister(h); }

int kv_cufile_buf_register(kv_cufile *L, kv_cufile_set_ctx_fn set, uint64_t ctx, uint64_t p, size_t n,
			   kv_cufile_err *e)
{
	if (kv_ctx(set, ctx, e))
		return e->code;
	return kv_status(e, "cuFileBufRegister", L->cuFileBufRegister((const void *)(uintptr_t)p, n, 0));
}

int kv_cufile_buf_deregister(kv_cufile *L, kv_cufile_set_ctx_fn set, uint64_t ctx, uint64_t p, kv_cufile_err *e)
{
	if (kv_ctx(set, ctx, e))
		return e->code;
	return kv_status(e, "cuFileBufDeregister", L->cuFileBufDeregister((const void *)(uintptr_t)p));
}

/* kv_moved checks what one cuFileRead or cuFileWrite of req returned. */
static int kv_moved(kv_cufile_err *e, const char *op, ssize_t r, const kv_cufile_req *req, long i)
{
	if (r == req->len)
		return 0;
	if (r == -1) {
		kv_fail(e, op, KV_CUFILE_ERR_ERRNO);
		e->sys_errno = errno;
	} else if (r < 0) {
		kv_fail(e, op, (int)-r);
	} else {
		kv_fail(e, op, KV_CUFILE_ERR_SHORT);
		e->res = r;
	}
	e->index = i;
	return e->code;
}

int kv_cufile_io(kv_cufile *L, kv_cufile_set_ctx_fn set, uint64_t ctx, kv_CUfileHandle_t h, uint64_t base,
		 const kv_cufile_req *req, long n, int write, kv_cufile_err *e)
{
	if (kv_ctx(set, ctx, e))
		return e->code;
	void *buf = (void *)(uintptr_t)base;
	for (long i = 0; i < n; i++) {
		errno = 0;
		size_t len = (size_t)req[i].len;
		off_t off = (off_t)req[i].off, dst = (off_t)req[i].dst;
		ssize_t r = write ? L->cuFileWrite(h, buf, len, off, dst) : L->cuFileRead(h, buf, len, off, dst);
		if (kv_moved(e, write ? "cuFileWrite" : "cuFileRead", r, &req[i], i))
			return e->code;
	}
	return 0;
}
