/* cufilewrap.h: the cuFile (GPUDirect Storage) calls kvtier makes,
 * loaded at run time.
 *
 * No cufile.h: the few types are declared here from the facts of
 * NVIDIA's header. libcufile.so.0 is dlopen'd and every function found
 * by dlsym under the exported name written beside it in
 * KV_CUFILE_SYMBOLS, the one symbol list, expanded for the table, the
 * loader and csrc's ABI facts test, which checks it, the structs and the
 * constants against testdata/cufile-abi.golden (cufile.h's facts).
 * cufile.h binds cuFileDriverClose to cuFileDriverClose_v2 (a
 * reference-counted close); libraries older than that export only the
 * unversioned name, which the loader takes in its place.
 *
 * Every shim function returns 0 or a code and fills a kv_cufile_err with
 * the call that failed. Calls that touch GPU memory first make the
 * caller's CUDA context current on the calling thread through the
 * set-current function the CUDA shim loaded (cuCtxSetCurrent). Nothing
 * here prints or retries, and a loaded library is never closed.
 */
#ifndef KVTIER_CUFILEWRAP_H
#define KVTIER_CUFILEWRAP_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "../shim/shim.h"

/* CUfileError_t: two int-sized enums, the cuFile status and, when it is
 * CU_FILE_CUDA_DRIVER_ERROR, the CUresult. Returned by value. */
typedef struct {
	int err;
	int cu_err;
} kv_CUfileError_t;

/* CUfileDescr_t: the handle type, a union of a Linux fd and a Windows
 * handle (pointer-sized), and the file system operation table. */
typedef struct {
	int type;
	union {
		int fd;
		void *handle;
	} handle;
	const void *fs_ops;
} kv_CUfileDescr_t;

typedef void *kv_CUfileHandle_t;

/* CUfileDrvProps_t: what cuFileDriverGetProperties reports. nvfs is the
 * nvidia-fs kernel driver as the library sees it: its version (0.0 when
 * nvidia-fs is not in use: cuFile's POSIX compatibility mode), sizes,
 * and the status (CU_FILE_*_SUPPORTED bits) and control
 * (CU_FILE_USE_POLL_MODE, CU_FILE_ALLOW_COMPAT_MODE bits) flags. Only
 * the fields kvtier reads are listed for the ABI test; the rest keep
 * the layout. */
typedef struct {
	struct {
		unsigned int major_version;
		unsigned int minor_version;
		size_t poll_thresh_size;
		size_t max_direct_io_size;
		unsigned int dstatusflags;
		unsigned int dcontrolflags;
	} nvfs;
	unsigned int fflags;
	unsigned int max_device_cache_size;
	unsigned int per_buffer_cache_size;
	unsigned int max_device_pinned_mem_size;
	unsigned int max_batch_io_size;
	unsigned int max_batch_io_timeout_msecs;
} kv_CUfileDrvProps_t;

/* X(struct, field): every field of the structs above, for the ABI test. */
#define KV_CUFILE_FIELDS(X)                \
	X(CUfileError_t, err)              \
	X(CUfileError_t, cu_err)           \
	X(CUfileDescr_t, type)             \
	X(CUfileDescr_t, handle)           \
	X(CUfileDescr_t, fs_ops)           \
	X(CUfileDrvProps_t, nvfs)          \
	X(CUfileDrvProps_t, nvfs.major_version) \
	X(CUfileDrvProps_t, nvfs.minor_version) \
	X(CUfileDrvProps_t, nvfs.dstatusflags)  \
	X(CUfileDrvProps_t, nvfs.dcontrolflags) \
	X(CUfileDrvProps_t, fflags)

/* X(name, value): the cufile.h constants the shim uses; each becomes
 * KV_<name>. */
#define KV_CUFILE_CONSTANTS(X)                  \
	X(CU_FILE_SUCCESS, 0)                   \
	X(CU_FILE_DRIVER_NOT_INITIALIZED, 5001) \
	X(CU_FILE_CUDA_DRIVER_ERROR, 5011)      \
	X(CU_FILE_HANDLE_TYPE_OPAQUE_FD, 1)     \
	X(CU_FILE_ALLOW_COMPAT_MODE, 1)

#define KV_CUFILE_ENUM(name, value) KV_##name = (value),
enum { KV_CUFILE_CONSTANTS(KV_CUFILE_ENUM) };
#undef KV_CUFILE_ENUM

enum {
	/* Shim failures, outside cuFile's codes and shim.h's loader codes. */
	KV_CUFILE_ERR_CONTEXT = -5, /* making the CUDA context current failed; cu_err says how */
	KV_CUFILE_ERR_ERRNO = -6,   /* cuFileRead or cuFileWrite returned -1: errno says why */
	KV_CUFILE_ERR_SHORT = -7,   /* cuFileRead or cuFileWrite moved fewer bytes than asked */
};

/* X(name, exported symbol, required, return type, parameter list). */
#define KV_CUFILE_SYMBOLS(X)                                                                              \
	X(cuFileDriverOpen, "cuFileDriverOpen", 1, kv_CUfileError_t, (void))                              \
	X(cuFileDriverClose, "cuFileDriverClose_v2", 1, kv_CUfileError_t, (void))                         \
	X(cuFileHandleRegister, "cuFileHandleRegister", 1, kv_CUfileError_t,                              \
	  (kv_CUfileHandle_t *, kv_CUfileDescr_t *))                                                      \
	X(cuFileHandleDeregister, "cuFileHandleDeregister", 1, void, (kv_CUfileHandle_t))                 \
	X(cuFileBufRegister, "cuFileBufRegister", 1, kv_CUfileError_t, (const void *, size_t, int))      \
	X(cuFileBufDeregister, "cuFileBufDeregister", 1, kv_CUfileError_t, (const void *))                \
	X(cuFileRead, "cuFileRead", 1, ssize_t, (kv_CUfileHandle_t, void *, size_t, off_t, off_t))          \
	X(cuFileWrite, "cuFileWrite", 1, ssize_t, (kv_CUfileHandle_t, const void *, size_t, off_t, off_t))  \
	X(cuFileDriverGetProperties, "cuFileDriverGetProperties", 0, kv_CUfileError_t, (kv_CUfileDrvProps_t *))

/* A kv_cufile is one loaded libcufile: its handle and function table. */
typedef struct kv_cufile {
	kv_shim_lib head;       /* the library and the path that opened */
	char close_symbol[64];  /* the cuFileDriverClose that resolved */
#define KV_CUFILE_FIELD(name, sym, req, ret, args) ret(*name) args;
	KV_CUFILE_SYMBOLS(KV_CUFILE_FIELD)
#undef KV_CUFILE_FIELD
} kv_cufile;

/* A kv_cufile_err says which call failed and how: code is a
 * CUfileOpError, a KV_CUFILE_ERR_* or a KV_SHIM_ERR_* code; cu_err the
 * CUresult of a CUDA driver error, sys_errno the errno of
 * KV_CUFILE_ERR_ERRNO, index the request of a failed read or write (-1
 * else), res the bytes a short one returned. */
typedef kv_shim_err kv_cufile_err;

/* kv_cufile_set_ctx_fn makes a CUDA context current (cuCtxSetCurrent). */
typedef int (*kv_cufile_set_ctx_fn)(void *ctx);

/* One read: len bytes at file offset off into the device buffer at
 * buffer offset dst; one write: len bytes from the device buffer at
 * buffer offset dst to file offset off. */
typedef struct {
	int64_t off;
	int64_t dst;
	int64_t len;
} kv_cufile_req;

/* kv_cufile_load opens path ("" or NULL: libcufile.so.0, then
 * libcufile.so) and resolves the table. */
kv_cufile *kv_cufile_load(const char *path, kv_cufile_err *e);

int kv_cufile_driver_open(kv_cufile *L, kv_cufile_set_ctx_fn set, uint64_t ctx, kv_cufile_err *e);
int kv_cufile_driver_close(kv_cufile *L, kv_cufile_err *e);
/* kv_cufile_driver_props is cuFileDriverGetProperties (the driver open):
 * the nvidia-fs version it reports and its status and control flags;
 * KV_SHIM_ERR_UNSUPPORTED where the library lacks the call. */
int kv_cufile_driver_props(kv_cufile *L, unsigned *major, unsigned *minor, unsigned *status, unsigned *control,
			   kv_cufile_err *e);
int kv_cufile_handle_register(kv_cufile *L, int fd, kv_CUfileHandle_t *h, kv_cufile_err *e);
void kv_cufile_handle_deregister(kv_cufile *L, kv_CUfileHandle_t h);
int kv_cufile_buf_register(kv_cufile *L, kv_cufile_set_ctx_fn set, uint64_t ctx, uint64_t p, size_t n,
			   kv_cufile_err *e);
int kv_cufile_buf_deregister(kv_cufile *L, kv_cufile_set_ctx_fn set, uint64_t ctx, uint64_t p, kv_cufile_err *e);
/* kv_cufile_io moves the n requests in order between h and the device
 * buffer at base: it writes them where write is set and reads them
 * otherwise; the first that fails or moves short ends it. */
int kv_cufile_io(kv_cufile *L, kv_cufile_set_ctx_fn set, uint64_t ctx, kv_CUfileHandle_t h, uint64_t base,
		 const kv_cufile_req *req, long n, int write, kv_cufile_err *e);

#endif
