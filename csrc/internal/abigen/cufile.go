package main

import (
	"fmt"
	"io"
	"path/filepath"
)

// The cuFile facts (csrc/testdata/cufile-abi.golden) come from cudarc's
// bindgen output of NVIDIA's cufile.h (src/cufile/sys/mod.rs) and the
// cuFile shim's lists in csrc/cufilewrap/cufilewrap.h.

// runCUFile writes the cuFile golden.
func runCUFile(w io.Writer, cudarc, shims string) error {
	b, err := parseFile(filepath.Join(cudarc, "src/cufile/sys/mod.rs"))
	if err != nil {
		return err
	}
	want, err := readShimHeader(filepath.Join(shims, "cufilewrap/cufilewrap.h"), reCUFileSym, reCUFileConst, reFieldX)
	if err != nil {
		return err
	}
	head := `# cuFile (GPUDirect Storage) ABI facts kvtier's cuFile shim relies on, per CUDA
# header version; written by csrc/internal/abigen -cufile from cudarc's bindgen
# output of NVIDIA's cufile.h. Classes: p pointer, i integer, f float; last, the
# return type.
`
	return writeFacts(w, head, versions, func(v int) ([]string, error) { return cufileFacts(v, b, want) })
}

func cufileFacts(v int, b *Bindings, want shimLists) ([]string, error) {
	var out []string
	for _, name := range want.symbols {
		sig, err := signature(b, name, v, fmt.Sprintf("cufile.h of CUDA %d", v))
		if err != nil {
			return nil, err
		}
		ret, _ := lookup(b.Returns, name, v)
		out = append(out, fmt.Sprintf("%d cufile %s %s %s", v, name, sig, cReturn(ret)))
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
