package main

import (
	"strings"
	"testing"
)

// bindings is a small piece of bindgen output in cudarc's form.
const bindings = `pub use self::cudaError_enum as CUresult;
pub type CUdeviceptr = CUdeviceptr_v2;
pub type CUdeviceptr_v2 = ::core::ffi::c_ulonglong;
pub type CUstream = *mut CUstream_st;
pub const CU_MEMHOSTALLOC_PORTABLE: u32 = 1;
#[cfg(any(feature = "cuda-12080", feature = "cuda-12090"))]
#[repr(u32)]
pub enum cudaError_enum {
    CUDA_SUCCESS = 0,
    #[cfg(any(feature = "cuda-12090"))]
    CUDA_ERROR_NEW = 77,
}
#[repr(C)]
pub struct CUmemLocation_st {
    pub type_: ::core::ffi::c_int,
    pub id: ::core::ffi::c_int,
}
pub type CUmemLocation = CUmemLocation_st;
#[repr(C)]
pub struct Pair_st {
    pub a: ::core::ffi::c_uint,
    pub loc: CUmemLocation,
    pub p: *mut f32,
}
extern "C" {
    #[cfg(any(
        feature = "cuda-12080",
        feature = "cuda-12090"
    ))]
    pub fn cuMemcpyBatchAsync(
        dsts: *mut CUdeviceptr,
        count: usize,
        hStream: CUstream,
    ) -> CUresult;
    pub fn cuMemFree_v2(dptr: CUdeviceptr) -> CUresult;
}
`

func TestParseBindings(t *testing.T) {
	b, err := ParseBindings(strings.NewReader(bindings))
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		fn      string
		version int
		want    string // classes, "" when not declared
	}{
		{"cuMemcpyBatchAsync", 12080, " p8 i8 p8"},
		{"cuMemcpyBatchAsync", 13000, ""},
		{"cuMemFree_v2", 13000, " i8"},
	} {
		params, ok := lookup(b.Funcs, tt.fn, tt.version)
		got := ""
		if ok {
			if got, err = classes(b, params, tt.version); err != nil {
				t.Fatal(err)
			}
		}
		if got != tt.want {
			t.Errorf("%s in %d: %q, want %q", tt.fn, tt.version, got, tt.want)
		}
	}
	if n, ok := lookup(b.Consts, "CUDA_ERROR_NEW", 12080); ok {
		t.Errorf("a 12.9 variant in 12.8: %d", n)
	}
	if n, _ := lookup(b.Consts, "CUDA_ERROR_NEW", 12090); n != 77 {
		t.Errorf("CUDA_ERROR_NEW = %d", n)
	}
	if n, _ := lookup(b.Consts, "CU_MEMHOSTALLOC_PORTABLE", 13000); n != 1 {
		t.Errorf("CU_MEMHOSTALLOC_PORTABLE = %d", n)
	}
	fields, union, ok := b.structOf("Pair_st", 12080)
	if !ok || union {
		t.Fatal("no Pair_st")
	}
	size, _, offs, err := b.layout(fields, false, 12080)
	if err != nil || size != 24 || offs["loc"] != [2]int{4, 8} || offs["p"] != [2]int{16, 8} {
		t.Errorf("layout: size %d, offsets %v, %v", size, offs, err)
	}
	if f, _, _ := b.structOf("CUmemLocation", 12080); len(f) != 2 || f[0].name != "type" {
		t.Errorf("CUmemLocation fields %+v (bindgen's type_ is C's type)", f)
	}
}

// TestUnionsAndReturns lays out a struct holding a union (the bindgen
// form of cufile.h's CUfileDescr_t) and reads functions' return types.
func TestUnionsAndReturns(t *testing.T) {
	const src = `#[repr(C)]
pub struct CUfileDescr_t {
    pub type_: CUfileFileHandleType,
    pub handle: CUfileDescr_t__bindgen_ty_1,
    pub fs_ops: *const CUfileFSOps_t,
}
#[repr(C)]
pub union CUfileDescr_t__bindgen_ty_1 {
    pub fd: ::core::ffi::c_int,
    pub handle: *mut ::core::ffi::c_void,
}
pub enum CUfileFileHandleType {
    CU_FILE_HANDLE_TYPE_OPAQUE_FD = 1,
}
extern "C" {
    pub fn cuFileRead(fh: CUfileHandle_t, size: usize) -> isize;
    pub fn cuFileHandleDeregister(fh: CUfileHandle_t);
}
`
	b, err := ParseBindings(strings.NewReader(src))
	if err != nil {
		t.Fatal(err)
	}
	fields, union, ok := b.structOf("CUfileDescr_t", 12080)
	if !ok || union {
		t.Fatal("no struct CUfileDescr_t")
	}
	size, _, offs, err := b.layout(fields, false, 12080)
	if err != nil || size != 24 || offs["handle"] != [2]int{8, 8} || offs["fs_ops"] != [2]int{16, 8} {
		t.Errorf("layout: size %d, offsets %v, %v", size, offs, err)
	}
	for fn, want := range map[string]string{"cuFileRead": "ssize_t", "cuFileHandleDeregister": "void"} {
		if ret, _ := lookup(b.Returns, fn, 12080); cReturn(ret) != want {
			t.Errorf("%s returns %q, want %s", fn, cReturn(ret), want)
		}
	}
}
