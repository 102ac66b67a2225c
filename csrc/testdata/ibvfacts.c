/* ibvfacts.c: prints the sizes, offsets and constants the verbs shim
 * relies on, compiled once over the shim's own declarations (ibvcore.h)
 * and once, with -DKVT_REAL_VERBS, over rdma-core's <infiniband/verbs.h>;
 * csrc's ABI test compares the two outputs. The real build also checks at
 * compile time that every symbol of the shim's list has the prototype
 * verbs.h declares, and with argument "dlvsym" that the system's
 * libibverbs.so.1 exports each at its version. */
#define _GNU_SOURCE /* dlvsym */
#include <dlfcn.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#ifdef KVT_REAL_VERBS
#include <infiniband/verbs.h>
#else
#include "ibvwrap/ibvcore.h"
#endif
#include "ibvwrap/ibvsyms.h"

#define KVT_SIZE(T) printf("size %s %zu\n", #T, sizeof(T));
#define KVT_FIELD(T, m) printf("offset %s.%s %zu %zu\n", #T, #m, offsetof(T, m), sizeof(((T *)0)->m));
#define KVT_CONST(n) printf("const %s %lld\n", #n, (long long)(n));

#ifdef KVT_REAL_VERBS
#define KVT_COMPAT(name, ver, req, ret, params) \
	_Static_assert(__builtin_types_compatible_p(__typeof__(&name), ret(*) params), \
		       #name ": the shim's prototype is not verbs.h's");
KVT_IBV_SYMBOLS(KVT_COMPAT)

static int check_versions(void)
{
	void *h = dlopen("libibverbs.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		printf("nolib\n");
		return 0;
	}
	int bad = 0;
#define KVT_VSYM(name, ver, req, ret, params)                                    \
	if (!dlvsym(h, #name, ver)) {                                            \
		printf("missing %s@%s\n", #name, ver);                           \
		bad = 1;                                                         \
	}
	KVT_IBV_SYMBOLS(KVT_VSYM)
	return bad;
}
#endif

int main(int argc, char **argv)
{
#ifdef KVT_REAL_VERBS
	if (argc > 1 && strcmp(argv[1], "dlvsym") == 0)
		return check_versions();
#endif
	(void)argc;
	(void)argv;
	KVT_IBV_SIZES(KVT_SIZE)
	KVT_IBV_FIELDS(KVT_FIELD)
	KVT_IBV_CONSTANTS(KVT_CONST)
	return 0;
}
