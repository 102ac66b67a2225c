/* nvmlfacts.c: prints the NVML shim's own view of the ABI it relies on,
 * in nvml-abi.golden's form (without the version column), by expanding
 * the shim's lists: each symbol it looks up (by its exported, versioned
 * name) with its parameter classes and sizes, then its return's; the
 * structs' sizes and field offsets; the constants. Built by csrc's ABI
 * test. */
#include "nvmlwrap/nvmlwrap.h"
#include "testdata/facts.h"

/* KV_IS_VOID(T) is 1 when T is the token void (a parameter list
 * "(void)"), else 0. */
#define KV_PROBE_void ~, 1
#define KV_SECOND(a, b, ...) b
#define KV_SECOND_(...) KV_SECOND(__VA_ARGS__)
#define KV_IS_VOID(T) KV_SECOND_(KV_CAT(KV_PROBE_, T), 0, )
#define KV_FIRST(a, ...) a

#define KV_PARAMS_1(args) printf(" 0");
#define KV_PARAMS_0(args)         \
	printf(" %d", KV_N args); \
	KV_EACH(KV_ARG, args)
#define KV_SYM(name, sym, req, ret, args)                   \
	printf("nvml %s", sym);                             \
	KV_CAT(KV_PARAMS_, KV_IS_VOID(KV_FIRST args))(args) \
	KV_ARG(ret)                                         \
	printf("\n");
#define KV_CONST(name, value) printf("const %s %lld\n", #name, (long long)KV_##name);
#define KV_FIELD(s, f) printf("field %s.%s %zu %zu\n", #s, #f, offsetof(kv_##s, f), sizeof(((kv_##s *)0)->f));

int main(void)
{
	KV_NVML_SYMBOLS(KV_SYM)
	printf("struct nvmlPciInfo_t %zu\n", sizeof(kv_nvmlPciInfo_t));
	printf("struct nvmlMemory_t %zu\n", sizeof(kv_nvmlMemory_t));
	KV_NVML_FIELDS(KV_FIELD)
	KV_NVML_CONSTANTS(KV_CONST)
	return 0;
}
