// Command abigen writes csrc/testdata/cuda-abi.golden: the facts kvtier's
// CUDA shims rely on, as NVIDIA's headers state them for CUDA 12.8, 12.9
// and 13.0. It reads:
//
//   - the shims' own lists (csrc/cudawrap/cudawrap.h,
//     csrc/cublaswrap/cublaswrap.h), to know which symbols, structs and
//     constants to look up;
//   - cudarc's bindgen output of NVIDIA's cuda.h and cublas_v2.h for every
//     CUDA version it supports (github.com/coreylowman/cudarc,
//     src/driver/sys/mod.rs and src/cublas/sys/mod.rs, fetched with the
//     search tool's fetch): each exported function's parameters, struct
//     fields and enum values, per version;
//   - lines that say which exported variant cuGetProcAddress returns for
//     a name at an ABI version: NVIDIA's generated loader in cuda-python
//     (cuda_bindings/.../cydriver.pyx: _F_cuGetProcAddress_v2('cuMemAlloc',
//     &__cuMemAlloc_v2, 3020, ...)) and cudaTypedefs.h's
//     "#define PFN_x PFN_x_vN" lines. A variant that first appears after
//     CUDA 11.4 (cudarc's oldest version) has that version as its ABI.
//
// Usage (from the module root):
//
//	go run ./csrc/internal/abigen -cudarc CUDARC_CHECKOUT -abi ABI_LINES >csrc/testdata/cuda-abi.golden
//
// With -cufile it writes csrc/testdata/cufile-abi.golden instead: the
// cuFile shim's symbols (by the exported name it looks up), structs and
// constants from cudarc's src/cufile/sys/mod.rs (cufile.h):
//
//	go run ./csrc/internal/abigen -cufile -cudarc CUDARC_CHECKOUT >csrc/testdata/cufile-abi.golden
//
// No NVIDIA file is committed; only the facts below are.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// versions are the CUDA versions the golden covers.
var versions = []int{12080, 12090, 13000}

func main() {
	cudarc := flag.String("cudarc", "", "a cudarc checkout (src/driver/sys/mod.rs, src/cublas/sys/mod.rs)")
	abi := flag.String("abi", "", "a file of cuGetProcAddress loader lines and PFN #define lines")
	shims := flag.String("csrc", "csrc", "the shims' directory")
	cufile := flag.Bool("cufile", false, "write the cuFile facts (src/cufile/sys/mod.rs) instead")
	flag.Parse()
	run := func() error { return run(os.Stdout, *cudarc, *abi, *shims) }
	if *cufile {
		run = func() error { return runCUFile(os.Stdout, *cudarc, *shims) }
	}
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "abigen:", err)
		os.Exit(1)
	}
}

func run(w io.Writer, cudarc, abiFile, shims string) error {
	drv, err := parseFile(filepath.Join(cudarc, "src/driver/sys/mod.rs"))
	if err != nil {
		return err
	}
	blas, err := parseFile(filepath.Join(cudarc, "src/cublas/sys/mod.rs"))
	if err != nil {
		return err
	}
	want, err := readShims(shims)
	if err != nil {
		return err
	}
	abiText, err := os.ReadFile(abiFile)
	if err != nil {
		return err
	}
	table := abiTable(string(abiText), drv, want.symbols)
	head := `# CUDA ABI facts kvtier's shims rely on, per CUDA header version; written by
# csrc/internal/abigen from cudarc's bindgen output of NVIDIA's headers and
# NVIDIA's cuGetProcAddress loader tables. Classes: p pointer, i integer, f float.
`
	return writeFacts(w, head, versions, func(v int) ([]string, error) { return facts(v, drv, blas, want, table) })
}

func parseFile(path string) (*Bindings, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := ParseBindings(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return b, nil
}

// shimLists are the names the shims list.
type shimLists struct {
	symbols, blas, constants, structs []string
	fields                            [][2]string
}

// The patterns of the shims' X-macro lists: the CUDA and cuBLAS shims'
// symbols, constants and fields, then the cuFile shim's.
var (
	reSym         = regexp.MustCompile(`X\((cu[A-Z]\w+), \d+, [01],`)
	reBlas        = regexp.MustCompile(`X\((cublas\w+), [01],`)
	reConstX      = regexp.MustCompile(`X\(((?:CU|CUDA|CUBLAS)_\w+), `)
	reFieldX      = regexp.MustCompile(`X\((CU[a-z]\w*), ([a-zA-Z][\w.]*)\)`)
	reCUFileSym   = regexp.MustCompile(`X\((cuFile\w+), "(\w+)", [01],`)
	reCUFileConst = regexp.MustCompile(`X\(((?:CU_FILE|CUFILE)\w*), `)
)

func readShims(dir string) (shimLists, error) {
	var s shimLists
	for _, f := range []string{"cudawrap/cudawrap.h", "cublaswrap/cublaswrap.h"} {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			return s, err
		}
		t := string(b)
		s.symbols = append(s.symbols, submatches(reSym, t)...)
		s.blas = append(s.blas, submatches(reBlas, t)...)
		s.constants = append(s.constants, submatches(reConstX, t)...)
		s.addFields(reFieldX, t)
	}
	return s, nil
}

// addFields appends the X(struct, field) entries re finds in t, and each
// struct once.
func (s *shimLists) addFields(re *regexp.Regexp, t string) {
	for _, m := range re.FindAllStringSubmatch(t, -1) {
		s.fields = append(s.fields, [2]string{m[1], m[2]})
		if !contains(s.structs, m[1]) {
			s.structs = append(s.structs, m[1])
		}
	}
}

// readShimHeader reads what the shim header at path lists: the exported
// name of each symbol (sym's second group), the constants and the fields.
func readShimHeader(path string, sym, constant, field *regexp.Regexp) (shimLists, error) {
	text, err := os.ReadFile(path)
	if err != nil {
		return shimLists{}, err
	}
	var want shimLists
	for _, m := range sym.FindAllStringSubmatch(string(text), -1) {
		want.symbols = append(want.symbols, m[2])
	}
	want.constants = submatches(constant, string(text))
	want.addFields(field, string(text))
	return want, nil
}

// writeFacts writes head, then the lines facts gives for each source (a
// header version, a header file), in order.
func writeFacts[S any](w io.Writer, head string, sources []S, facts func(S) ([]string, error)) error {
	fmt.Fprint(w, head)
	for _, src := range sources {
		lines, err := facts(src)
		if err != nil {
			return err
		}
		for _, l := range lines {
			fmt.Fprintln(w, l)
		}
	}
	return nil
}

// signature is name's parameter count and classes in b at version v;
// what names b's header in the error.
func signature(b *Bindings, name string, v int, what string) (string, error) {
	params, ok := lookup(b.Funcs, name, v)
	if !ok {
		return "", fmt.Errorf("%s declares no %s", what, name)
	}
	cls, err := classes(b, params, v)
	if err != nil {
		return "", fmt.Errorf("%s: %w", name, err)
	}
	return fmt.Sprintf("%d%s", len(params), cls), nil
}

func submatches(re *regexp.Regexp, t string) []string {
	var out []string
	for _, m := range re.FindAllStringSubmatch(t, -1) {
		out = append(out, m[1])
	}
	return out
}

func contains(xs []string, s string) bool {
	return slices.Contains(xs, s)
}

// An abiEntry says cuGetProcAddress(base, abi) returns variant.
type abiEntry struct {
	abi     int
	variant string
}

var (
	reLoader = regexp.MustCompile(`cuGetProcAddress_v2\('(\w+)', <void \*\*>&__(\w+), (\d+),`)
	rePFN    = regexp.MustCompile(`#define PFN_(\w+)\s+PFN_(\w+)_v(\d+)\b`)
)

// abiTable gathers, for every base name, the ABI versions the sources
// state and those of variants newer than cudarc's oldest version.
func abiTable(text string, drv *Bindings, bases []string) map[string][]abiEntry {
	t := map[string][]abiEntry{}
	add := func(base string, e abiEntry) {
		if slices.Contains(t[base], e) {
			return
		}
		t[base] = append(t[base], e)
	}
	for _, m := range reLoader.FindAllStringSubmatch(text, -1) {
		n, _ := strconv.Atoi(m[3])
		add(m[1], abiEntry{n, m[2]})
	}
	oldest := 11040
	for _, m := range rePFN.FindAllStringSubmatch(text, -1) {
		n, _ := strconv.Atoi(m[3])
		if v := newestVariant(drv, m[1], oldest); v != "" {
			add(m[1], abiEntry{n, v})
		}
	}
	for _, base := range bases {
		for _, v := range variants(drv, base) {
			if first := firstVersion(drv, v, oldest); first > oldest {
				add(base, abiEntry{first, v})
			}
		}
	}
	return t
}

var reSuffix = regexp.MustCompile(`^(\w+?)(_v(\d+))?$`)

// variants lists the declared functions base, base_v2, base_v3 ...
func variants(b *Bindings, base string) []string {
	var out []string
	for name := range b.Funcs {
		if m := reSuffix.FindStringSubmatch(name); m != nil && m[1] == base {
			out = append(out, name)
		}
	}
	sort.Slice(out, func(i, j int) bool { return suffix(out[i]) < suffix(out[j]) })
	return out
}

func suffix(name string) int {
	m := reSuffix.FindStringSubmatch(name)
	n, _ := strconv.Atoi(m[3])
	return max(n, 1)
}

// newestVariant is base's most recent variant declared in version.
func newestVariant(b *Bindings, base string, version int) string {
	best := ""
	for _, v := range variants(b, base) {
		if _, ok := lookup(b.Funcs, v, version); ok {
			best = v
		}
	}
	return best
}

// firstVersion is the oldest version (at least floor) declaring name.
func firstVersion(b *Bindings, name string, floor int) int {
	first := 0
	for _, it := range b.Funcs[name] {
		if it.versions == nil {
			return floor
		}
		for v := range it.versions {
			if first == 0 || v < first {
				first = v
			}
		}
	}
	return max(first, floor)
}

func facts(v int, drv, blas *Bindings, want shimLists, table map[string][]abiEntry) ([]string, error) {
	var out []string
	for _, base := range want.symbols {
		for _, e := range table[base] {
			params, ok := lookup(drv.Funcs, e.variant, v)
			if !ok {
				continue
			}
			cls, err := classes(drv, params, v)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", e.variant, err)
			}
			out = append(out, fmt.Sprintf("%d pfn %s %d %s %d%s", v, base, e.abi, e.variant, len(params), cls))
		}
	}
	for _, name := range want.blas {
		sig, err := signature(blas, name, v, fmt.Sprintf("cuBLAS %d", v))
		if err != nil {
			return nil, err
		}
		out = append(out, fmt.Sprintf("%d blas %s %s", v, name, sig))
	}
	s, err := structFacts(v, drv, want)
	if err != nil {
		return nil, err
	}
	out = append(out, s...)
	for _, name := range want.constants {
		if n, ok := lookup(drv.Consts, name, v); ok {
			out = append(out, fmt.Sprintf("%d const %s %d", v, name, n))
		} else if n, ok := lookup(blas.Consts, name, v); ok {
			out = append(out, fmt.Sprintf("%d const %s %d", v, name, n))
		} else {
			return nil, fmt.Errorf("CUDA %d declares no constant %s", v, name)
		}
	}
	return out, nil
}

func classes(b *Bindings, params []string, v int) (string, error) {
	var sb strings.Builder
	for _, p := range params {
		c, n, err := b.Class(p, v)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(&sb, " %c%d", c, n)
	}
	return sb.String(), nil
}
