/* cublaswrap.c: loads libcublas and runs bf16 GEMMs. See cublaswrap.h.
 * Included by the cgo preamble of package cuda. The caller makes the CUDA
 * context current on the thread first (cuBLAS works on the current one). */
#include "cublaswrap.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int kv_blas_fail(kv_cublas_err *e, const char *op, int code)
{
	if (e) {
		e->op = op;
		e->code = code;
	}
	return code;
}

kv_cublas *kv_cublas_load(const char *override, kv_cublas_err *e)
{
	const char *paths[4];
	int np = 0;
	char tried[512] = "";
	const char *last = "";
	void *lib = NULL;
	const char *opened = NULL;

	e->msg[0] = 0;
	if (override && override[0])
		paths[np++] = override;
	else {
		paths[np++] = "libcublas.so.13";
		paths[np++] = "libcublas.so.12";
		paths[np++] = "libcublas.so.11";
	}
	for (int i = 0; i < np && !lib; i++) {
		size_t l = strlen(tried);
		snprintf(tried + l, sizeof tried - l, "%s%s%s", i ? ", " : "",
			 override && override[0] ? "KVTIER_LIBCUBLAS=" : "", paths[i]);
		dlerror();
		lib = dlopen(paths[i], RTLD_NOW | RTLD_LOCAL);
		if (lib)
			opened = paths[i];
		else {
			const char *d = dlerror();
			last = d ? d : "unknown dlopen error";
		}
	}
	if (!lib) {
		snprintf(e->msg, sizeof e->msg, "cannot load libcublas (tried %s): %s", tried, last);
		kv_blas_fail(e, "dlopen", KV_BLAS_ERR_NO_LIBRARY);
		return NULL;
	}
	kv_cublas *B = calloc(1, sizeof *B);
	if (!B) {
		dlclose(lib);
		kv_blas_fail(e, "calloc", KV_BLAS_ERR_NO_SYMBOL);
		return NULL;
	}
	B->lib = lib;
	snprintf(B->path, sizeof B->path, "%s", opened);
#define KV_CUBLAS_RESOLVE(name, req, ret, args)                                                  \
	B->name = (ret(*) args)dlsym(lib, #name);                                                \
	if (!B->name && (req)) {                                                                 \
		snprintf(e->msg, sizeof e->msg, "%s: required symbol %s not found", opened, #name); \
		kv_blas_fail(e, #name, KV_BLAS_ERR_NO_SYMBOL);                                   \
		kv_cublas_unload(B);                                                             \
		return NULL;                                                                     \
	}
	KV_CUBLAS_SYMBOLS(KV_CUBLAS_RESOLVE)
#undef KV_CUBLAS_RESOLVE
	return B;
}

void kv_cublas_unload(kv_cublas *B)
{
	if (!B)
		return;
#define KV_CUBLAS_CLEAR(name, req, ret, args) B->name = NULL;
	KV_CUBLAS_SYMBOLS(KV_CUBLAS_CLEAR)
#undef KV_CUBLAS_CLEAR
	if (B->lib)
		dlclose(B->lib);
	free(B);
}

const char *kv_cublas_status_name(kv_cublas *B, int code)
{
	return B->cublasGetStatusName ? B->cublasGetStatusName(code) : NULL;
}

int kv_cublas_create(kv_cublas *B, cublasHandle_t *h, kv_blas_stream s, int *version, kv_cublas_err *e)
{
	int r = B->cublasCreate_v2(h);
	if (r != 0)
		return kv_blas_fail(e, "cublasCreate_v2", r);
	r = B->cublasSetStream_v2(*h, s);
	if (r != 0) {
		B->cublasDestroy_v2(*h);
		return kv_blas_fail(e, "cublasSetStream_v2", r);
	}
	r = B->cublasGetVersion_v2(*h, version);
	if (r != 0) {
		B->cublasDestroy_v2(*h);
		return kv_blas_fail(e, "cublasGetVersion_v2", r);
	}
	return 0;
}

int kv_cublas_destroy(kv_cublas *B, cublasHandle_t h, kv_cublas_err *e)
{
	int r = B->cublasDestroy_v2(h);
	return r ? kv_blas_fail(e, "cublasDestroy_v2", r) : 0;
}

int kv_cublas_gemms(kv_cublas *B, cublasHandle_t h, const kv_gemm *g, size_t n, size_t *done, kv_cublas_err *e)
{
	const float one = 1.0f, zero = 0.0f;
	*done = 0;
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
			return kv_blas_fail(e, op, r);
		*done = i + 1;
	}
	return 0;
}
