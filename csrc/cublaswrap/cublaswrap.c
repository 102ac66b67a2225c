/* cublaswrap.c: loads libcublas and runs bf16 GEMMs. See cublaswrap.h.
 * Built by cgo as part of package cublaswrap. */
#include "cublaswrap.h"


kv_cublas *kv_cublas_load(const char *path, kv_cublas_err *e)
{
	kv_cublas *B = kv_shim_open(path, NULL, "libcublas", sizeof *B, e);
	if (!B)
		return NULL;
#define KV_CUBLAS_RESOLVE(name, req, ret, args)               \
	B->name = (ret(*) args)dlsym(B->head.lib, #name);     \
	if (!B->name && (req))                                \
		return kv_shim_missing(B, #name, NULL, e);
	KV_CUBLAS_SYMBOLS(KV_CUBLAS_RESOLVE)
#undef KV_CUBLAS_RESOLVE
	return B;
}

int kv_cublas_preload(const char *path, kv_cublas_err *e)
{
	/* The table is not needed, only the library, which stays open. */
	void *t = kv_shim_open(path, NULL, "libcublasLt", sizeof(kv_shim_lib), e);
	if (!t)
		return e->code;
	free(t);
	return 0;
}

const char *kv_cublas_status_name(kv_cublas *B, int code)
{
	return B->cublasGetStatusName ? B->cublasGetStatusName(code) : NULL;
}

/* kv_blas_ctx makes h's context current on this thread. */
static int kv_blas_ctx(kv_blas_set_ctx_fn set, void *ctx, kv_cublas_err *e)
{
	int r = set(ctx);
	return r ? kv_shim_fail(e, "cuCtxSetCurrent", r) : 0;
}

int kv_cublas_create(kv_cublas *B, kv_blas_set_ctx_fn set_ctx, void *ctx, kv_blas_stream s, kv_blas_handle **out,
		     int *version, kv_cublas_err *e)
{
	*out = NULL;
	kv_blas_handle *h = calloc(1, sizeof *h);
	if (!h)
		return kv_shim_fail(e, "calloc", KV_SHIM_ERR_NO_MEMORY);
	h->set_ctx = set_ctx;
	h->ctx = ctx;
	int r = kv_blas_ctx(set_ctx, ctx, e);
	if (r != 0) {
		free(h);
		return r;
	}
	const char *op = "cublasCreate_v2";
	r = B->cublasCreate_v2(&h->h);
	if (r == 0) {
		op = "cublasSetStream_v2";
		r = B->cublasSetStream_v2(h->h, s);
	}
	if (r == 0) {
		op = "cublasGetVersion_v2";
		r = B->cublasGetVersion_v2(h->h, version);
	}
	if (r != 0) {
		if (h->h)
			B->cublasDestroy_v2(h->h);
		free(h);
		return kv_shim_fail(e, op, r);
	}
	*out = h;
	return 0;
}

int kv_cublas_destroy(kv_cublas *B, kv_blas_handle *h, kv_cublas_err *e)
{
	int r = kv_blas_ctx(h->set_ctx, h->ctx, e);
	if (r != 0)
		return r;
	r = B->cublasDestroy_v2(h->h);
	if (r != 0)
		return kv_shim_fail(e, "cublasDestroy_v2", r);
	free(h);
	return 0;
}

int kv_cublas_gemms(kv_cublas *B, kv_blas_handle *bh, const kv_gemm *g, size_t n, size_t *done, kv_cublas_err *e)
{
	const float one = 1.0f, zero = 0.0f;
	cublasHandle_t h = bh->h;
	*done = 0;
	int rc = kv_blas_ctx(bh->set_ctx, bh->ctx, e);
	if (rc != 0)
		return rc;
	for (size_t i = 0; i < n; i++) {
		const kv_gemm *x = &g[i];
		/* Row-major C = A·B is column-major Cᵀ = Bᵀ·Aᵀ: swap the operands
		 * and m with n; every leading dimension is a row length. */
		int r;
		const char *op;
		if (x->batch <= 1) {
			op = "cublasGemmEx";
			r = B->cublasGemmEx(h, KV_CUBLAS_OP_N, KV_CUBLAS_OP_N, x->n, x->m, x->k, &one,
					    (const void *)(uintptr_t)x->b, KV_CUDA_R_16BF, x->n,
					    (const void *)(uintptr_t)x->a, KV_CUDA_R_16BF, x->k, &zero,
					    (void *)(uintptr_t)x->c, KV_CUDA_R_16BF, x->n, KV_CUBLAS_COMPUTE_32F,
					    KV_CUBLAS_GEMM_DEFAULT);
		} else {
			op = "cublasGemmStridedBatchedEx";
			r = B->cublasGemmStridedBatchedEx(
				h, KV_CUBLAS_OP_N, KV_CUBLAS_OP_N, x->n, x->m, x->k, &one, (const void *)(uintptr_t)x->b,
				KV_CUDA_R_16BF, x->n, (long long)x->k * x->n, (const void *)(uintptr_t)x->a,
				KV_CUDA_R_16BF, x->k, (long long)x->m * x->k, &zero, (void *)(uintptr_t)x->c,
				KV_CUDA_R_16BF, x->n, (long long)x->m * x->n, x->batch, KV_CUBLAS_COMPUTE_32F,
				KV_CUBLAS_GEMM_DEFAULT);
		}
		if (r != 0)
			return kv_shim_fail(e, op, r);
		*done = i + 1;
	}
	return 0;
}
