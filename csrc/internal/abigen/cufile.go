package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
)

// The cuFile facts (csrc/testdata/cufile-abi.golden) come from cudarc's
// bindgen output of NVIDIA's cufile.h (src/cufile/sys/mod.rs) and the
// cuFile shim's lists in csrc/cufilewrap/cufilewrap.h.

var (
	reCUFileSym   = regexp.MustCompile(`X\((cuFile\w+), "(\w+)", [01],`)
	reCUFileConst = regexp.MustCompile(`X\(((?:CU_FILE|CUFILE)\w*), `)
)

// runCUFile writes the cuFile golden.
func runCUFile(w io.Writer, cudarc, shims string) error {
	b, err := parseFile(filepath.Join(cudarc, "src/cufile/sys/mod.rs"))
	if err != nil {
		return err
	}
	text, err := os.ReadFile(filepath.Join(shims, "cufilewrap/cufilewrap.h"))
	if err != nil {
		return err
	}
	var want shimLists
	for _, m := range reCUFileSym.FindAllStringSubmatch(string(text), -1) {
		want.symbols = append(want.symbols, m[2]) // the exported name looked up
	}
	want.constants = submatches(reCUFileConst, string(text))
	for _, m := range reFieldX.FindAllStringSubmatch(string(text), -1) {
		want.fields = append(want.fields, [2]string{m[1], m[2]})
		if !contains(want.structs, m[1]) {
			want.structs = append(want.structs, m[1])
		}
	}
	fmt.Fprintln(w, "# cuFile (GPUDirect Storage) ABI facts kvtier's cuFile shim relies on, per CUDA")
	fmt.Fprintln(w, "# header version; written by csrc/internal/abigen -cufile from cudarc's bindgen")
	fmt.Fprintln(w, "# output of NVIDIA's cufile.h. Classes: p pointer, i integer, f float; last, the")
	fmt.Fprintln(w, "# return type.")
	for _, v := range versions {
		lines, err := cufileFacts(v, b, want)
		if err != nil {
			return err
		}
		for _, l := range lines {
			fmt.Fprintln(w, l)
		}
	}
	return nil
}

func cufileFacts(v int, b *Bindings, want shimLists) ([]string, error) {
	var out []string
	for _, name := range want.symbols {
		params, ok := lookup(b.Funcs, name, v)
		if !ok {
			return nil, fmt.Errorf("cufile.h of CUDA %d declares no %s", v, name)
		}
		cls, err := classes(b, params, v)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		ret, _ := lookup(b.Returns, name, v)
		out = append(out, fmt.Sprintf("%d cufile %s %d%s %s", v, name, len(params), cls, cReturn(ret)))
	}
	s, err := structFacts(v, b, want)
	if err != nil {
		return nil, err
	}
	out = append(out, s...)
	for _, name := range want.constants {
		n, ok := lookup(b.Consts, name, v)
		if !ok {
			return nil, fmt.Errorf("cufile.h of CUDA %d declares no constant %s", v, name)
		}
		out = append(out, fmt.Sprintf("%d const %s %d", v, name, n))
	}
	return out, nil
}

// cReturn names a bindgen return type as C writes it: none is void,
// isize is ssize_t, a typedef keeps its name.
func cReturn(t string) string {
	switch t {
	case "":
		return "void"
	case "isize":
		return "ssize_t"
	}
	return t
}
