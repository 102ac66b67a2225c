/* cublaswrap.h: the cuBLAS calls kvtier makes, loaded at run time.
 *
 * libcublas is dlopen'd (KVTIER_LIBCUBLAS, then libcublas.so.13, .12,
 * .11); its functions come from dlsym by their exported _v2 / Ex names
 * listed once in KV_CUBLAS_SYMBOLS. GEMMs take bf16 operands
 * (CUDA_R_16BF), accumulate in fp32 (CUBLAS_COMPUTE_32F) and use
 * CUBLAS_GEMM_DEFAULT. Functions return 0 or a raw cublasStatus_t and say
 * which call failed; nothing prints.
 */
#ifndef KVTIER_CUBLASWRAP_H
#define KVTIER_CUBLASWRAP_H

#include <stddef.h>
#include <stdint.h>

typedef int cublasStatus_t;
typedef struct cublasContext *cublasHandle_t;
typedef struct CUstream_st *kv_blas_stream;

enum {
	KV_CUDA_R_16BF = 14,
	KV_CUBLAS_COMPUTE_32F = 68,
	KV_CUBLAS_GEMM_DEFAULT = -1,
	KV_CUBLAS_OP_N = 0,
	KV_BLAS_ERR_NO_LIBRARY = -1,
	KV_BLAS_ERR_NO_SYMBOL = -2,
};

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
	void *lib;
	char path[512];
#define KV_CUBLAS_FIELD(name, req, ret, args) ret(*name) args;
	KV_CUBLAS_SYMBOLS(KV_CUBLAS_FIELD)
#undef KV_CUBLAS_FIELD
} kv_cublas;

typedef struct {
	const char *op;
	int code;
	char msg[1024];
} kv_cublas_err;

/* A kv_gemm is C[m×n] = A[m×k]·B[k×n] (row-major, bf16), batch times
 * with strides of one matrix each; a, b, c are device pointers. */
typedef struct {
	int m, n, k, batch;
	uint64_t a, b, c;
} kv_gemm;

kv_cublas *kv_cublas_load(const char *override, kv_cublas_err *e);
void kv_cublas_unload(kv_cublas *B);
int kv_cublas_create(kv_cublas *B, cublasHandle_t *h, kv_blas_stream s, int *version, kv_cublas_err *e);
int kv_cublas_destroy(kv_cublas *B, cublasHandle_t h, kv_cublas_err *e);
const char *kv_cublas_status_name(kv_cublas *B, int code);
/* kv_cublas_gemms runs n GEMMs on the handle's stream; *done counts those
 * issued before an error. */
int kv_cublas_gemms(kv_cublas *B, cublasHandle_t h, const kv_gemm *g, size_t n, size_t *done, kv_cublas_err *e);

#endif
