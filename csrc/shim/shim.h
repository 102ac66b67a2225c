/* shim.h: what every kvtier C shim shares: the error it fills, the head
 * of its function table and the loader that opens its library.
 *
 * A shim function returns 0 or a code and fills a kv_shim_err with the
 * call that failed; package shim turns that into a Go Status. The loader
 * dlopens the library, allocates the shim's table (headed by a
 * kv_shim_lib) and says in the error which paths it tried and why each
 * failed. A loaded library is never closed (no dlclose: unloading a
 * library whose threads are alive is not safe). Everything here is static
 * inline: each shim compiles its own copy of this one source.
 */
#ifndef KVTIER_SHIM_H
#define KVTIER_SHIM_H

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Loader failures, outside every library's own codes. */
enum {
	KV_SHIM_ERR_NO_LIBRARY = -1,
	KV_SHIM_ERR_NO_SYMBOL = -2,   /* a required symbol is missing */
	KV_SHIM_ERR_UNSUPPORTED = -3, /* an optional symbol is missing */
	KV_SHIM_ERR_NO_MEMORY = -4,
};

/* A kv_shim_err says which call failed and how; a shim fills the fields
 * that apply to it and leaves the others zero (index -1). */
typedef struct {
	const char *op; /* static string: the native function or shim step */
	int code;       /* the library's code, or a shim's code */
	int sys_errno;  /* errno of a failed system call; 0 if none */
	int cu_err;     /* a CUresult under another library's code; 0 if none */
	int wc_status;  /* enum ibv_wc_status of a failed completion */
	long index;     /* the request that failed; -1 if none */
	long long res;  /* what a short read or write returned */
	char name[64];  /* the code's name where the shim could ask; "" else */
	char msg[1024]; /* detail (paths tried, dlerror, the library's text) */
} kv_shim_err;

/* kv_shim_clear empties e before a call. */
static inline void kv_shim_clear(kv_shim_err *e)
{
	memset(e, 0, sizeof *e);
	e->index = -1;
}

/* kv_shim_fail records that op failed with code and returns code. */
static inline int kv_shim_fail(kv_shim_err *e, const char *op, int code)
{
	if (e) {
		e->op = op;
		e->code = code;
	}
	return code;
}

/* A kv_shim_lib heads every shim's table: the library and the path that
 * opened it. */
typedef struct {
	void *lib;
	char path[512];
} kv_shim_lib;

/* kv_shim_open opens path, or where path is NULL or "" each of the
 * NULL-ended names in turn, and returns a zeroed table of size bytes
 * headed by a kv_shim_lib for the first that opened. what names the
 * library in the message ("libcuda"). On failure it returns NULL with e
 * saying why: KV_SHIM_ERR_NO_LIBRARY, every path tried and dlerror's
 * reason for each, or KV_SHIM_ERR_NO_MEMORY. */
static inline void *kv_shim_open(const char *path, const char *const *names, const char *what, size_t size,
				 kv_shim_err *e)
{
	const char *one[] = {path, NULL};
	const char *const *try = (path && path[0]) || !names ? one : names;
	char tried[160] = "", why[640] = "";
	size_t nt = 0, nw = 0;
	void *lib = NULL;
	kv_shim_clear(e);
	for (int i = 0; try[i] && !lib; i++) {
		dlerror();
		lib = dlopen(try[i], RTLD_NOW | RTLD_LOCAL);
		if (lib) {
			path = try[i];
			break;
		}
		const char *d = dlerror();
		if (nt < sizeof tried)
			nt += snprintf(tried + nt, sizeof tried - nt, "%s%s", i ? ", " : "", try[i]);
		if (nw < sizeof why)
			nw += snprintf(why + nw, sizeof why - nw, "%s%s", i ? "; " : "", d ? d : "unknown dlopen error");
	}
	if (!lib) {
		snprintf(e->msg, sizeof e->msg, "cannot load %s (tried %s): %s", what, tried, why);
		kv_shim_fail(e, "dlopen", KV_SHIM_ERR_NO_LIBRARY);
		return NULL;
	}
	kv_shim_lib *L = calloc(1, size);
	if (!L) {
		kv_shim_fail(e, "calloc", KV_SHIM_ERR_NO_MEMORY);
		return NULL;
	}
	L->lib = lib;
	snprintf(L->path, sizeof L->path, "%s", path);
	return L;
}

/* kv_shim_missing fails a load whose required symbol sym (at ABI ver,
 * NULL if the name carries it) was not found, frees the table and returns
 * NULL. */
static inline void *kv_shim_missing(void *table, const char *sym, const char *ver, kv_shim_err *e)
{
	kv_shim_lib *L = table;
	snprintf(e->msg, sizeof e->msg, "%s: required %s%s%s not found", L->path, sym, ver ? "@" : "",
		 ver ? ver : "");
	kv_shim_fail(e, sym, KV_SHIM_ERR_NO_SYMBOL);
	free(table);
	return NULL;
}

#endif
