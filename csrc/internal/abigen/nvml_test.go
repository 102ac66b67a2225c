package main

import (
	"slices"
	"strings"
	"testing"
)

// nvml.h as NVIDIA writes its declarations (a go-nvml copy's handle
// typedef included).
const nvmlHeader = `typedef struct
{
    struct nvmlDevice_st* handle;
} nvmlDevice_t;
nvmlReturn_t DECLDIR nvmlInit_v2(void);
const DECLDIR char* nvmlErrorString(nvmlReturn_t result);
nvmlReturn_t DECLDIR nvmlDeviceGetName(nvmlDevice_t device, char *name, unsigned int length);
nvmlReturn_t DECLDIR nvmlDeviceGetMigMode(nvmlDevice_t device, unsigned int *currentMode, unsigned int *pendingMode);
`

func TestPrototype(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		sym, ret string
		params   []string
	}{
		{"nvmlInit_v2", "nvmlReturn_t", nil},
		{"nvmlErrorString", "const char*", []string{"nvmlReturn_t"}},
		{"nvmlDeviceGetName", "nvmlReturn_t", []string{"nvmlDevice_t", "char *", "unsigned int"}},
		{"nvmlDeviceGetMigMode", "nvmlReturn_t", []string{"nvmlDevice_t", "unsigned int *", "unsigned int *"}},
	} {
		ret, params, err := prototype(nvmlHeader, tc.sym)
		if err != nil || ret != tc.ret || !slices.Equal(params, tc.params) {
			t.Errorf("prototype(%s) = %q, %q, %v; want %q, %q", tc.sym, ret, params, err, tc.ret, tc.params)
		}
	}
	if _, _, err := prototype(nvmlHeader, "nvmlInit"); err == nil {
		t.Error("nvmlInit (unversioned, not declared) found")
	}
}

// TestNVIDIAHandles: go-nvml's one-pointer struct becomes NVIDIA's pointer
// typedef again.
func TestNVIDIAHandles(t *testing.T) {
	t.Parallel()
	got := string(nvidiaHandles([]byte(nvmlHeader)))
	if !strings.HasPrefix(got, "typedef struct nvmlDevice_st* nvmlDevice_t;\n") {
		t.Errorf("handle typedef: %q", got[:60])
	}
}
