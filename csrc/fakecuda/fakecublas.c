/* fakecublas.c: a stand-in libcublas for kvtier's tests, built by the Go
 * tests with the system C compiler (cc -shared -fPIC -o libcublas.so.12).
 * GEMMs follow cuBLAS's column-major definition and are computed on the
 * host (device memory is host memory under fakecuda) when small; larger
 * ones are only checked. Arguments are validated as cuBLAS would.
 *
 *   FAKECUBLAS_FAIL_GEMM_AT=N   the N-th GEMM call (from 0) fails
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef int cublasStatus_t;
enum { S_OK = 0, S_NOT_INITIALIZED = 1, S_INVALID_VALUE = 7, S_EXECUTION_FAILED = 13, S_NOT_SUPPORTED = 15 };

struct handle {
	int magic;
	void *stream;
};

static long ngemm;

static float bf16_to_f(uint16_t v)
{
	uint32_t u = (uint32_t)v << 16;
	float f;
	memcpy(&f, &u, 4);
	return f;
}

static uint16_t f_to_bf16(float f)
{
	uint32_t u;
	memcpy(&u, &f, 4);
	u += 0x7fff + ((u >> 16) & 1); /* round to nearest even */
	return (uint16_t)(u >> 16);
}

cublasStatus_t cublasCreate_v2(void **h)
{
	struct handle *x = calloc(1, sizeof *x);
	x->magic = 0xb1a5;
	*h = x;
	return S_OK;
}

cublasStatus_t cublasDestroy_v2(void *h)
{
	struct handle *x = h;
	if (!x || x->magic != 0xb1a5)
		return S_NOT_INITIALIZED;
	x->magic = 0;
	free(x);
	return S_OK;
}

cublasStatus_t cublasSetStream_v2(void *h, void *s)
{
	struct handle *x = h;
	if (!x || x->magic != 0xb1a5)
		return S_NOT_INITIALIZED;
	x->stream = s;
	return S_OK;
}

cublasStatus_t cublasGetVersion_v2(void *h, int *v)
{
	(void)h;
	*v = 120900;
	return S_OK;
}

const char *cublasGetStatusName(cublasStatus_t s)
{
	switch (s) {
	case S_OK: return "CUBLAS_STATUS_SUCCESS";
	case S_NOT_INITIALIZED: return "CUBLAS_STATUS_NOT_INITIALIZED";
	case S_INVALID_VALUE: return "CUBLAS_STATUS_INVALID_VALUE";
	case S_EXECUTION_FAILED: return "CUBLAS_STATUS_EXECUTION_FAILED";
	case S_NOT_SUPPORTED: return "CUBLAS_STATUS_NOT_SUPPORTED";
	}
	return "CUBLAS_STATUS_UNKNOWN";
}

static cublasStatus_t gemm(void *h, int ta, int tb, int m, int n, int k, const void *alpha, const void *A, int at,
			   int lda, long long sa, const void *B, int bt, int ldb, long long sb, const void *beta,
			   void *C, int ct, int ldc, long long sc, int batch, int compute, int algo)
{
	struct handle *x = h;
	if (!x || x->magic != 0xb1a5)
		return S_NOT_INITIALIZED;
	if (ta != 0 || tb != 0 || at != 14 || bt != 14 || ct != 14 || compute != 68 || algo != -1)
		return S_NOT_SUPPORTED; /* only what kvtier asks for is modelled */
	if (m <= 0 || n <= 0 || k <= 0 || batch <= 0 || lda < m || ldb < k || ldc < m || !A || !B || !C || !alpha ||
	    !beta)
		return S_INVALID_VALUE;
	const char *fail = getenv("FAKECUBLAS_FAIL_GEMM_AT");
	long i = ngemm++;
	if (fail && *fail && atol(fail) == i)
		return S_EXECUTION_FAILED;
	if ((double)m * n * k * batch > (double)(1 << 18))
		return S_OK;
	float al = *(const float *)alpha, be = *(const float *)beta;
	for (int b = 0; b < batch; b++) {
		const uint16_t *a = (const uint16_t *)A + b * sa, *bb = (const uint16_t *)B + b * sb;
		uint16_t *c = (uint16_t *)C + b * sc;
		for (int j = 0; j < n; j++)
			for (int i = 0; i < m; i++) {
				float acc = 0;
				for (int l = 0; l < k; l++)
					acc += bf16_to_f(a[i + (long)l * lda]) * bf16_to_f(bb[l + (long)j * ldb]);
				float old = be != 0 ? bf16_to_f(c[i + (long)j * ldc]) : 0;
				c[i + (long)j * ldc] = f_to_bf16(al * acc + be * old);
			}
	}
	return S_OK;
}

cublasStatus_t cublasGemmEx(void *h, int ta, int tb, int m, int n, int k, const void *alpha, const void *A, int at,
			    int lda, const void *B, int bt, int ldb, const void *beta, void *C, int ct, int ldc,
			    int compute, int algo)
{
	return gemm(h, ta, tb, m, n, k, alpha, A, at, lda, 0, B, bt, ldb, 0, beta, C, ct, ldc, 0, 1, compute, algo);
}

cublasStatus_t cublasGemmStridedBatchedEx(void *h, int ta, int tb, int m, int n, int k, const void *alpha,
					  const void *A, int at, int lda, long long sa, const void *B, int bt, int ldb,
					  long long sb, const void *beta, void *C, int ct, int ldc, long long sc,
					  int batch, int compute, int algo)
{
	return gemm(h, ta, tb, m, n, k, alpha, A, at, lda, sa, B, bt, ldb, sb, beta, C, ct, ldc, sc, batch, compute,
		    algo);
}
