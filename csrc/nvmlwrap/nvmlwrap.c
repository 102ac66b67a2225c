/* nvmlwrap.c: loads libnvidia-ml and wraps the NVML calls kvtier makes.
 * See nvmlwrap.h. Built by cgo as part of package nvmlwrap. */
#include "nvmlwrap.h"

/* kv_check turns a returned nvmlReturn_t into the shim's code, with
 * NVML's own message for it. */
static int kv_check(kv_nvml *L, kv_nvml_err *e, const char *op, kv_nvmlReturn_t r)
{
	if (r == KV_NVML_SUCCESS)
		return 0;
	kv_shim_fail(e, op, r);
	const char *s = L->nvmlErrorString ? L->nvmlErrorString(r) : NULL;
	snprintf(e->msg, sizeof e->msg, "%s", s ? s : "");
	return r;
}

kv_nvml *kv_nvml_load(const char *path, kv_nvml_err *e)
{
	static const char *const names[] = {"libnvidia-ml.so.1", NULL};
	kv_nvml *L = kv_shim_open(path, names, "libnvidia-ml", sizeof *L, e);
	if (!L)
		return NULL;
#define KV_NVML_RESOLVE(name, sym, req, ret, args)      \
	L->name = (ret(*) args)dlsym(L->head.lib, sym); \
	if (!L->name && (req))                          \
		return kv_shim_missing(L, sym, NULL, e);
	KV_NVML_SYMBOLS(KV_NVML_RESOLVE)
#undef KV_NVML_RESOLVE
	return L;
}

/* KV_CALL calls the optional function name of L, or answers
 * NVML_ERROR_FUNCTION_NOT_FOUND where the library lacks it. */
#define KV_CALL(L, name, ...) ((L)->name ? (L)->name(__VA_ARGS__) : KV_NVML_ERROR_FUNCTION_NOT_FOUND)

int kv_nvml_init(kv_nvml *L, kv_nvml_err *e) { return kv_check(L, e, "nvmlInit_v2", L->nvmlInit()); }

int kv_nvml_shutdown(kv_nvml *L, kv_nvml_err *e) { return kv_check(L, e, "nvmlShutdown", L->nvmlShutdown()); }

int kv_nvml_driver(kv_nvml *L, char *version, unsigned int n, int *cuda, kv_nvml_err *e)
{
	version[0] = 0;
	*cuda = 0;
	int r = kv_check(L, e, "nvmlSystemGetDriverVersion", KV_CALL(L, nvmlSystemGetDriverVersion, version, n));
	if (r)
		return r;
	return kv_check(L, e, "nvmlSystemGetCudaDriverVersion", KV_CALL(L, nvmlSystemGetCudaDriverVersion, cuda));
}

int kv_nvml_count(kv_nvml *L, unsigned int *n, kv_nvml_err *e)
{
	*n = 0;
	return kv_check(L, e, "nvmlDeviceGetCount_v2", L->nvmlDeviceGetCount(n));
}

/* kv_fill queries device d for g; each query that fails leaves its fields
 * unknown. */
static void kv_fill(kv_nvml *L, kv_nvmlDevice_t d, kv_nvml_gpu *g)
{
	kv_nvmlPciInfo_t pci;
	kv_nvmlMemory_t mem;
	unsigned int cur, pending;
	memset(g, 0, sizeof *g);
	g->mig = -1;
	if (KV_CALL(L, nvmlDeviceGetName, d, g->name, sizeof g->name) != KV_NVML_SUCCESS)
		g->name[0] = 0;
	if (KV_CALL(L, nvmlDeviceGetUUID, d, g->uuid, sizeof g->uuid) != KV_NVML_SUCCESS)
		g->uuid[0] = 0;
	memset(&pci, 0, sizeof pci);
	if (KV_CALL(L, nvmlDeviceGetPciInfo, d, &pci) == KV_NVML_SUCCESS)
		snprintf(g->bus_id, sizeof g->bus_id, "%.*s", (int)sizeof pci.busId, pci.busId);
	if (KV_CALL(L, nvmlDeviceGetMemoryInfo, d, &mem) == KV_NVML_SUCCESS)
		g->memory_total = mem.total;
	/* KV_GET(field, call): field keeps what call wrote, 0 when it failed. */
#define KV_GET(field, call)                 \
	if ((call) != KV_NVML_SUCCESS)      \
		g->field = 0;
	KV_GET(pcie_gen, KV_CALL(L, nvmlDeviceGetCurrPcieLinkGeneration, d, &g->pcie_gen))
	KV_GET(pcie_width, KV_CALL(L, nvmlDeviceGetCurrPcieLinkWidth, d, &g->pcie_width))
	KV_GET(pcie_max_gen, KV_CALL(L, nvmlDeviceGetMaxPcieLinkGeneration, d, &g->pcie_max_gen))
	KV_GET(pcie_max_width, KV_CALL(L, nvmlDeviceGetMaxPcieLinkWidth, d, &g->pcie_max_width))
	KV_GET(sm_clock, KV_CALL(L, nvmlDeviceGetClockInfo, d, KV_NVML_CLOCK_SM, &g->sm_clock))
	KV_GET(max_sm_clock, KV_CALL(L, nvmlDeviceGetMaxClockInfo, d, KV_NVML_CLOCK_SM, &g->max_sm_clock))
	KV_GET(mem_clock, KV_CALL(L, nvmlDeviceGetClockInfo, d, KV_NVML_CLOCK_MEM, &g->mem_clock))
#undef KV_GET
	if (KV_CALL(L, nvmlDeviceGetMigMode, d, &cur, &pending) == KV_NVML_SUCCESS)
		g->mig = cur == KV_NVML_DEVICE_MIG_ENABLE ? KV_NVML_DEVICE_MIG_ENABLE : KV_NVML_DEVICE_MIG_DISABLE;
}

int kv_nvml_gpu_at(kv_nvml *L, unsigned int i, kv_nvml_gpu *g, kv_nvml_err *e)
{
	kv_nvmlDevice_t d = NULL;
	int r = kv_check(L, e, "nvmlDeviceGetHandleByIndex_v2", L->nvmlDeviceGetHandleByIndex(i, &d));
	if (r)
		return r;
	kv_fill(L, d, g);
	return 0;
}

int kv_nvml_gpu_by_bus(kv_nvml *L, const char *bus, kv_nvml_gpu *g, kv_nvml_err *e)
{
	kv_nvmlDevice_t d = NULL;
	int r = kv_check(L, e, "nvmlDeviceGetHandleByPciBusId_v2", KV_CALL(L, nvmlDeviceGetHandleByPciBusId, bus, &d));
	if (r)
		return r;
	kv_fill(L, d, g);
	return 0;
}
