/* nvmlwrap.h: the NVML calls kvtier makes to list GPUs, loaded at run
 * time.
 *
 * No nvml.h: the two structs and the constants are declared here from
 * the facts of NVIDIA's header. libnvidia-ml.so.1 is dlopen'd and every
 * function found by dlsym under the exported name written beside it in
 * KV_NVML_SYMBOLS, the one symbol list, with its ABI version in the name
 * (nvmlInit_v2, nvmlDeviceGetPciInfo_v3...): it is expanded for the table,
 * the loader and csrc's ABI facts test, which checks it, the structs and
 * the constants against testdata/nvml-abi.golden (nvml.h's facts).
 *
 * Every shim function returns 0 or a code (an nvmlReturn_t, or a
 * negative shim code) and fills a kv_nvml_err with the call that failed
 * and NVML's message. Nothing here prints or retries, and a loaded
 * library is never closed.
 */
#ifndef KVTIER_NVMLWRAP_H
#define KVTIER_NVMLWRAP_H

#include "../shim/shim.h"

/* nvmlReturn_t and nvmlClockType_t are int-sized enums. */
typedef int kv_nvmlReturn_t;
typedef int kv_nvmlClockType_t;
/* nvmlDevice_t: a pointer to an opaque struct. */
typedef void *kv_nvmlDevice_t;

/* nvmlPciInfo_t, filled by nvmlDeviceGetPciInfo_v3. */
typedef struct {
	char busIdLegacy[16];
	unsigned int domain;
	unsigned int bus;
	unsigned int device;
	unsigned int pciDeviceId;
	unsigned int pciSubSystemId;
	char busId[32];
} kv_nvmlPciInfo_t;

/* nvmlMemory_t (version 1), filled by nvmlDeviceGetMemoryInfo. */
typedef struct {
	unsigned long long total;
	unsigned long long free;
	unsigned long long used;
} kv_nvmlMemory_t;

/* X(struct, field): every field of the structs above, for the ABI test. */
#define KV_NVML_FIELDS(X)                 \
	X(nvmlPciInfo_t, busIdLegacy)     \
	X(nvmlPciInfo_t, domain)          \
	X(nvmlPciInfo_t, bus)             \
	X(nvmlPciInfo_t, device)          \
	X(nvmlPciInfo_t, pciDeviceId)     \
	X(nvmlPciInfo_t, pciSubSystemId)  \
	X(nvmlPciInfo_t, busId)           \
	X(nvmlMemory_t, total)            \
	X(nvmlMemory_t, free)             \
	X(nvmlMemory_t, used)

/* X(name, value): the nvml.h constants the shim uses; each becomes
 * KV_<name>. */
#define KV_NVML_CONSTANTS(X)                          \
	X(NVML_SUCCESS, 0)                            \
	X(NVML_ERROR_UNINITIALIZED, 1)                \
	X(NVML_ERROR_INVALID_ARGUMENT, 2)             \
	X(NVML_ERROR_NOT_SUPPORTED, 3)                \
	X(NVML_ERROR_NO_PERMISSION, 4)                \
	X(NVML_ERROR_NOT_FOUND, 6)                    \
	X(NVML_ERROR_INSUFFICIENT_SIZE, 7)            \
	X(NVML_ERROR_DRIVER_NOT_LOADED, 9)            \
	X(NVML_ERROR_LIBRARY_NOT_FOUND, 12)           \
	X(NVML_ERROR_FUNCTION_NOT_FOUND, 13)          \
	X(NVML_ERROR_GPU_IS_LOST, 15)                 \
	X(NVML_ERROR_UNKNOWN, 999)                    \
	X(NVML_CLOCK_SM, 1)                           \
	X(NVML_CLOCK_MEM, 2)                          \
	X(NVML_DEVICE_MIG_DISABLE, 0)                 \
	X(NVML_DEVICE_MIG_ENABLE, 1)                  \
	X(NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE, 32)     \
	X(NVML_DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE, 16)  \
	X(NVML_DEVICE_NAME_V2_BUFFER_SIZE, 96)        \
	X(NVML_DEVICE_UUID_V2_BUFFER_SIZE, 96)        \
	X(NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE, 80)

#define KV_NVML_ENUM(name, value) KV_##name = (value),
enum { KV_NVML_CONSTANTS(KV_NVML_ENUM) };
#undef KV_NVML_ENUM

/* X(name, exported symbol, required, return type, parameter list). A
 * function that is not required and not found answers
 * NVML_ERROR_FUNCTION_NOT_FOUND. */
#define KV_NVML_SYMBOLS(X)                                                                                      \
	X(nvmlInit, "nvmlInit_v2", 1, kv_nvmlReturn_t, (void))                                                  \
	X(nvmlShutdown, "nvmlShutdown", 1, kv_nvmlReturn_t, (void))                                             \
	X(nvmlErrorString, "nvmlErrorString", 0, const char *, (kv_nvmlReturn_t))                               \
	X(nvmlSystemGetDriverVersion, "nvmlSystemGetDriverVersion", 0, kv_nvmlReturn_t, (char *, unsigned int)) \
	X(nvmlSystemGetCudaDriverVersion, "nvmlSystemGetCudaDriverVersion", 0, kv_nvmlReturn_t, (int *))        \
	X(nvmlDeviceGetCount, "nvmlDeviceGetCount_v2", 1, kv_nvmlReturn_t, (unsigned int *))                    \
	X(nvmlDeviceGetHandleByIndex, "nvmlDeviceGetHandleByIndex_v2", 1, kv_nvmlReturn_t,                      \
	  (unsigned int, kv_nvmlDevice_t *))                                                                    \
	X(nvmlDeviceGetHandleByPciBusId, "nvmlDeviceGetHandleByPciBusId_v2", 0, kv_nvmlReturn_t,                \
	  (const char *, kv_nvmlDevice_t *))                                                                    \
	X(nvmlDeviceGetName, "nvmlDeviceGetName", 0, kv_nvmlReturn_t, (kv_nvmlDevice_t, char *, unsigned int))  \
	X(nvmlDeviceGetUUID, "nvmlDeviceGetUUID", 0, kv_nvmlReturn_t, (kv_nvmlDevice_t, char *, unsigned int))  \
	X(nvmlDeviceGetPciInfo, "nvmlDeviceGetPciInfo_v3", 0, kv_nvmlReturn_t,                                  \
	  (kv_nvmlDevice_t, kv_nvmlPciInfo_t *))                                                                \
	X(nvmlDeviceGetMemoryInfo, "nvmlDeviceGetMemoryInfo", 0, kv_nvmlReturn_t,                               \
	  (kv_nvmlDevice_t, kv_nvmlMemory_t *))                                                                 \
	X(nvmlDeviceGetCurrPcieLinkGeneration, "nvmlDeviceGetCurrPcieLinkGeneration", 0, kv_nvmlReturn_t,       \
	  (kv_nvmlDevice_t, unsigned int *))                                                                    \
	X(nvmlDeviceGetCurrPcieLinkWidth, "nvmlDeviceGetCurrPcieLinkWidth", 0, kv_nvmlReturn_t,                 \
	  (kv_nvmlDevice_t, unsigned int *))                                                                    \
	X(nvmlDeviceGetMaxPcieLinkGeneration, "nvmlDeviceGetMaxPcieLinkGeneration", 0, kv_nvmlReturn_t,         \
	  (kv_nvmlDevice_t, unsigned int *))                                                                    \
	X(nvmlDeviceGetMaxPcieLinkWidth, "nvmlDeviceGetMaxPcieLinkWidth", 0, kv_nvmlReturn_t,                   \
	  (kv_nvmlDevice_t, unsigned int *))                                                                    \
	X(nvmlDeviceGetClockInfo, "nvmlDeviceGetClockInfo", 0, kv_nvmlReturn_t,                                 \
	  (kv_nvmlDevice_t, kv_nvmlClockType_t, unsigned int *))                                                \
	X(nvmlDeviceGetMaxClockInfo, "nvmlDeviceGetMaxClockInfo", 0, kv_nvmlReturn_t,                           \
	  (kv_nvmlDevice_t, kv_nvmlClockType_t, unsigned int *))                                                \
	X(nvmlDeviceGetMigMode, "nvmlDeviceGetMigMode", 0, kv_nvmlReturn_t,                                     \
	  (kv_nvmlDevice_t, unsigned int *, unsigned int *))

/* A kv_nvml is one loaded libnvidia-ml: its handle and function table. */
typedef struct kv_nvml {
	kv_shim_lib head; /* the library and the path that opened */
#define KV_NVML_FIELD(name, sym, req, ret, args) ret(*name) args;
	KV_NVML_SYMBOLS(KV_NVML_FIELD)
#undef KV_NVML_FIELD
} kv_nvml;

/* A kv_nvml_err says which call failed and how: code is an nvmlReturn_t
 * or a KV_SHIM_ERR_* loader code, msg nvmlErrorString's message or the
 * loader's detail. */
typedef kv_shim_err kv_nvml_err;

/* kv_nvml_gpu is what kvtier reads of one device; a query that failed
 * leaves its fields 0 ("" for strings), mig -1. */
typedef struct {
	char name[96];
	char uuid[96];
	char bus_id[32];
	unsigned long long memory_total;
	unsigned int pcie_gen, pcie_width, pcie_max_gen, pcie_max_width;
	unsigned int sm_clock, max_sm_clock, mem_clock;
	int mig; /* NVML_DEVICE_MIG_ENABLE or _DISABLE; -1 unknown */
} kv_nvml_gpu;

/* kv_nvml_load opens path ("" or NULL: libnvidia-ml.so.1) and resolves
 * the table. */
kv_nvml *kv_nvml_load(const char *path, kv_nvml_err *e);

int kv_nvml_init(kv_nvml *L, kv_nvml_err *e);
int kv_nvml_shutdown(kv_nvml *L, kv_nvml_err *e);
/* kv_nvml_driver fills the driver version (a string of at most n bytes)
 * and the CUDA version the driver supports (1000 × major + 10 × minor). */
int kv_nvml_driver(kv_nvml *L, char *version, unsigned int n, int *cuda, kv_nvml_err *e);
int kv_nvml_count(kv_nvml *L, unsigned int *n, kv_nvml_err *e);
/* kv_nvml_gpu_at fills g for the device at index i; kv_nvml_gpu_by_bus
 * for the device at PCI bus id bus (NVML's form, "00000000:19:00.0").
 * Only finding the device can fail; each query after that leaves its
 * fields unknown when it does. */
int kv_nvml_gpu_at(kv_nvml *L, unsigned int i, kv_nvml_gpu *g, kv_nvml_err *e);
int kv_nvml_gpu_by_bus(kv_nvml *L, const char *bus, kv_nvml_gpu *g, kv_nvml_err *e);

#endif
