/* cublaswrap.h: the cuBLAS calls kvtier makes, loaded at run time.
 *
 * libcublas is dlopen'd by the path the caller names (package cuda picks
 * the soname by the driver's major version); its functions come from
 * dlsym by their exported _v2 / Ex names listed once in
 * KV_CUBLAS_SYMBOLS. GEMMs take bf16 operands (CUDA_R_16BF), accumulate in
 * fp32 (CUBLAS_COMPUTE_32F) and use CUBLAS_GEMM_DEFAULT. Functions return
 * 0 or a raw cublasStatus_t and say which call failed; nothing prints; a
 * loaded library is never closed.
 *
 * cuBLAS works in the calling thread's current CUDA context. Go may run
 * two cgo calls on different threads, so every function that touches a
 * handle makes the handle's context current itself, in the same C call,
 * through the driver's cuCtxSetCurrent handed over at kv_cublas_create.
 */
#ifndef KVTIER_CUBLASWRAP_H
#define KVTIER_CUBLASWRAP_H

#include <stddef.h>
#include <stdint.h>

#include "../shim/shim.h"

typedef int cublasStatus_t;
typedef struct cublasContext *cublasHandle_t;
typedef struct CUstream_st *kv_blas_stream;

/* X(name, value): the constants by their names in library_types.h and
 * cublas_api.h; each becomes KV_<name>. */
#define KV_CUBLAS_CONSTANTS(X)          \
	X(CUDA_R_16BF, 14)              \
	X(CUBLAS_COMPUTE_32F, 68)       \
	X(CUBLAS_GEMM_DEFAULT, -1)      \
	X(CUBLAS_OP_N, 0)

#define KV_CUBLAS_ENUM(name, value) KV_##name = (value),
enum { KV_CUBLAS_CONSTANTS(KV_CUBLAS_ENUM) };
#undef KV_CUBLAS_ENUM

/* The driver's cuCtxSetCurrent, as cudawrap hands it over. */
typedef int (*kv_blas_set_ctx_fn)(void *ctx);

/* X(name, required, return type, parameter list) */
#define KV_CUBLAS_SYMBOLS(X) \
	X(cublasCreate_v2, 1, cublasStatus_t, (cublasHandle_t *)) \
	X(cublasDestroy_v2, 1, cublasStatus_t, (cublasHandle_t)) \
	X(cublasSetStream_v2, 1, cublasStatus_t, (cublasHandle_t, kv_blas_stream)) \
	X(cublasGetVersion_v2, 1, cublasStatus_t, (cublasHandle_t, int *)) \
	X(cublasGemmEx, 1, cublasStatus_t, (cublasHandle_t, int, int, int, int, int, const void *, const void *, int, int, \
					     const void *, int, int, const void *, void *, int, int, int, int)) \
	X(cublasGemmStridedBatchedEx, 1, cublasStatus_t, \
	  (cublasHandle_t, int, int, int, int, int, const void *, const void *, int, int, long long, const void *, int, \
	   int, long long, const void *, void *, int, int, long long, int, int, int)) \
	X(cublasGetStatusName, 0, const char *, (cublasStatus_t))

typedef struct kv_cublas {
	kv_shim_lib head; /* the library and the path that opened */
#define KV_CUBLAS_FIELD(name, req, ret, args) ret(*name) args;
	KV_CUBLAS_SYMBOLS(KV_CUBLAS_FIELD)
#undef KV_CUBLAS_FIELD
} kv_cublas;

/* A kv_cublas_err says which call failed: code is a raw cublasStatus_t,
 * the CUresult of cuCtxSetCurrent, or a KV_SHIM_ERR_* loader code. */
typedef kv_shim_err kv_cublas_err;

/* A kv_blas_handle is a cuBLAS handle with the context it belongs to. */
typedef struct {
	cublasHandle_t h;
	kv_blas_set_ctx_fn set_ctx;
	void *ctx;
} kv_blas_handle;

/* A kv_gemm is C[m×n] = A[m×k]·B[k×n] (row-major, bf16), batch times
 * with strides of one matrix each; a, b, c are device pointers. */
typedef struct {
	int m, n, k, batch;
	uint64_t a, b, c;
} kv_gemm;

/* kv_cublas_load opens path and resolves the symbols. */
kv_cublas *kv_cublas_load(const char *path, kv_cublas_err *e);
/* kv_cublas_preload opens path (libcublasLt beside a libcublas outside the
 * loader's path) and keeps it open, so that libcublas's dependency on its
 * soname is met by it. */
int kv_cublas_preload(const char *path, kv_cublas_err *e);
/* kv_cublas_create makes ctx current (set_ctx), creates a handle there,
 * binds it to stream s and reads cuBLAS's version: one C call. */
int kv_cublas_create(kv_cublas *B, kv_blas_set_ctx_fn set_ctx, void *ctx, kv_blas_stream s, kv_blas_handle **out,
		     int *version, kv_cublas_err *e);
/* kv_cublas_destroy makes the handle's context current and destroys it. */
int kv_cublas_destroy(kv_cublas *B, kv_blas_handle *h, kv_cublas_err *e);
const char *kv_cublas_status_name(kv_cublas *B, int code);
/* kv_cublas_gemms makes the handle's context current and runs n GEMMs on
 * the handle's stream; *done counts those issued before an error. */
int kv_cublas_gemms(kv_cublas *B, kv_blas_handle *h, const kv_gemm *g, size_t n, size_t *done, kv_cublas_err *e);

#endif
