/* cudafacts.c: prints the CUDA shims' own view of the ABI they rely on, in
 * the golden file's form (without the version column), by expanding the
 * shims' lists. Built by csrc's ABI test. */
#include <stddef.h>
#include <stdio.h>

#include "cudawrap/cudawrap.h"
#include "cublaswrap/cublaswrap.h"
#include "testdata/facts.h"

#define KV_PFN(name, abi, req, args)                        \
	printf("pfn %s %d %d", #name, abi, KV_N args);      \
	KV_EACH(KV_ARG, args)                               \
	printf("\n");
#define KV_PFN_OLD(name, abi, args) KV_PFN(name, abi, 0, args)
#define KV_BLAS(name, req, ret, args)                       \
	printf("blas %s %d", #name, KV_N args);             \
	KV_EACH(KV_ARG, args)                               \
	printf("\n");
#define KV_CONST(name, value) printf("const %s %lld\n", #name, (long long)KV_##name);
#define KV_FIELD(s, f) printf("field %s.%s %zu %zu\n", #s, #f, offsetof(kv_##s, f), sizeof(((kv_##s *)0)->f));

int main(void)
{
	KV_CUDA_SYMBOLS(KV_PFN)
	KV_CUDA_FALLBACKS(KV_PFN_OLD)
	KV_CUBLAS_SYMBOLS(KV_BLAS)
	printf("struct CUmemLocation %zu\n", sizeof(kv_CUmemLocation));
	printf("struct CUmemcpyAttributes %zu\n", sizeof(kv_CUmemcpyAttributes));
	KV_CUDA_FIELDS(KV_FIELD)
	KV_CUDA_CONSTANTS(KV_CONST)
	KV_CUBLAS_CONSTANTS(KV_CONST)
	return 0;
}
