/* cufilefacts.c: prints the cuFile shim's own view of the ABI it relies
 * on, in cufile-abi.golden's form (without the version column), by
 * expanding the shim's lists: each symbol it looks up with its parameter
 * classes and return type, the structs' sizes and field offsets, the
 * constants. Built by csrc's ABI test. */
#include <string.h>

#include "cufilewrap/cufilewrap.h"
#include "testdata/facts.h"

/* KV_IS_VOID(T) is 1 when T is the token void (a parameter list
 * "(void)"), else 0. */
#define KV_PROBE_void ~, 1
#define KV_SECOND(a, b, ...) b
#define KV_SECOND_(...) KV_SECOND(__VA_ARGS__)
#define KV_IS_VOID(T) KV_SECOND_(KV_CAT(KV_PROBE_, T), 0, )
#define KV_FIRST(a, ...) a

/* kv_name drops the shim's kv_ prefix from a type's name. */
static const char *kv_name(const char *s) { return strncmp(s, "kv_", 3) == 0 ? s + 3 : s; }

#define KV_PARAMS_1(args) printf(" 0");
#define KV_PARAMS_0(args)              \
	printf(" %d", KV_N args);      \
	KV_EACH(KV_ARG, args)
#define KV_SYM(name, sym, req, ret, args)                      \
	printf("cufile %s", sym);                              \
	KV_CAT(KV_PARAMS_, KV_IS_VOID(KV_FIRST args))(args)    \
	printf(" %s\n", kv_name(#ret));
#define KV_CONST(name, value) printf("const %s %lld\n", #name, (long long)KV_##name);
#define KV_FIELD(s, f) printf("field %s.%s %zu %zu\n", #s, #f, offsetof(kv_##s, f), sizeof(((kv_##s *)0)->f));

int main(void)
{
	KV_CUFILE_SYMBOLS(KV_SYM)
	printf("struct CUfileError_t %zu\n", sizeof(kv_CUfileError_t));
	printf("struct CUfileDescr_t %zu\n", sizeof(kv_CUfileDescr_t));
	printf("struct CUfileDrvProps_t %zu\n", sizeof(kv_CUfileDrvProps_t));
	KV_CUFILE_FIELDS(KV_FIELD)
	KV_CUFILE_CONSTANTS(KV_CONST)
	return 0;
}
