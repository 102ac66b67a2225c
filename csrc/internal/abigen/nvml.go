package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
)

// The NVML facts (csrc/testdata/nvml-abi.golden) come from NVIDIA's nvml.h
// itself, one header per NVML version (go-nvml's pkg/nvml/nvml.h at the
// commits that sync it with a CUDA release, fetched with the search
// tool's fetch), and the NVML shim's lists in csrc/nvmlwrap/nvmlwrap.h.
// For each header, abigen writes a C program that includes it and prints
// every fact with the compiler's own sizes and offsets: each symbol's
// parameter types as its prototype spells them, struct layouts by
// offsetof, constants by value. The header is read, never committed;
// go-nvml's copies wrap the opaque handle types in a struct for cgo, and
// abigen puts NVIDIA's pointer typedefs back before compiling.

var reNVMLVersion = regexp.MustCompile(`NVML VERSION: ([0-9.]+)`)

// runNVML writes the NVML golden from the headers at paths.
func runNVML(w io.Writer, headers []string, shims string) error {
	want, err := readShimHeader(filepath.Join(shims, "nvmlwrap/nvmlwrap.h"), reNVMLSym, reNVMLConst, reNVMLField)
	if err != nil {
		return err
	}
	head := `# NVML ABI facts kvtier's NVML shim relies on, per nvml.h version; written by
# csrc/internal/abigen -nvml from NVIDIA's nvml.h. Symbols by the exported name
# looked up: parameter count, each parameter's class (p pointer, i integer, f
# float) and size, then the return's.
`
	return writeFacts(w, head, headers, func(h string) ([]string, error) {
		lines, err := nvmlFacts(h, shims, want)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", h, err)
		}
		return lines, nil
	})
}

// nvmlFacts compiles and runs the facts program over header h and
// returns its lines, each prefixed with the header's NVML version.
func nvmlFacts(h, shims string, want shimLists) ([]string, error) {
	text, err := os.ReadFile(h)
	if err != nil {
		return nil, err
	}
	m := reNVMLVersion.FindSubmatch(text)
	if m == nil {
		return nil, fmt.Errorf("no \"NVML VERSION:\" line")
	}
	src, err := nvmlProgram(string(text), want)
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "abigen-nvml")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	if err := os.WriteFile(filepath.Join(dir, "nvml.h"), nvidiaHandles(text), 0o644); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, "facts.c"), []byte(src), 0o644); err != nil {
		return nil, err
	}
	bin := filepath.Join(dir, "facts")
	cc := exec.Command("gcc", "-Wall", "-Werror", "-Wno-deprecated-declarations", "-I", dir, "-I", shims, "-o", bin, filepath.Join(dir, "facts.c"))
	if out, err := cc.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("gcc: %v\n%s", err, out)
	}
	out, err := exec.Command(bin).Output()
	if err != nil {
		return nil, err
	}
	var lines []string
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		lines = append(lines, string(m[1])+" "+l)
	}
	return lines, nil
}

// reGoNVMLHandle matches go-nvml's edit of nvml.h: an opaque handle type
// (typedef struct nvmlDevice_st* nvmlDevice_t) wrapped in a struct of
// one pointer for cgo.
var reGoNVMLHandle = regexp.MustCompile(`typedef struct\s*\{\s*struct (nvml\w+_st)\s*\*\s*handle;\s*\}\s*(nvml\w+_t);`)

// nvidiaHandles restores NVIDIA's pointer typedefs of the handle types
// in a go-nvml copy of nvml.h; the struct passes the same way, but it is
// not what NVIDIA's header says.
func nvidiaHandles(text []byte) []byte {
	return reGoNVMLHandle.ReplaceAll(text, []byte("typedef struct $1* $2;"))
}

// nvmlProgram writes the C program that prints the facts of want as the
// header (text) declares them.
func nvmlProgram(text string, want shimLists) (string, error) {
	var b bytes.Buffer
	b.WriteString("#include <nvml.h>\n#include \"testdata/facts.h\"\n\nint main(void)\n{\n")
	for _, sym := range want.symbols {
		ret, params, err := prototype(text, sym)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(&b, "\tprintf(\"nvml %s %d\");\n", sym, len(params))
		for _, p := range params {
			fmt.Fprintf(&b, "\tKV_ARG(%s)\n", p)
		}
		fmt.Fprintf(&b, "\tKV_ARG(%s)\n\tprintf(\"\\n\");\n", ret)
	}
	for _, s := range want.structs {
		fmt.Fprintf(&b, "\tprintf(\"struct %s %%zu\\n\", sizeof(%s));\n", s, s)
	}
	for _, f := range want.fields {
		fmt.Fprintf(&b, "\tprintf(\"field %s.%s %%zu %%zu\\n\", offsetof(%s, %s), sizeof(((%s *)0)->%s));\n",
			f[0], f[1], f[0], f[1], f[0], f[1])
	}
	for _, c := range want.constants {
		fmt.Fprintf(&b, "\tprintf(\"const %s %%lld\\n\", (long long)%s);\n", c, c)
	}
	b.WriteString("\treturn 0;\n}\n")
	return b.String(), nil
}

// prototype finds sym's declaration in nvml.h ("nvmlReturn_t DECLDIR
// nvmlDeviceGetName(nvmlDevice_t device, char *name, unsigned int
// length);") and returns its return type and its parameters' types, the
// names dropped.
func prototype(text, sym string) (string, []string, error) {
	re := regexp.MustCompile(`(?m)^([\w ]*?)\s*DECLDIR\s+([\w ]*?\**)\s*` + sym + `\s*\(([^)]*)\)\s*;`)
	m := re.FindStringSubmatch(text)
	if m == nil {
		return "", nil, fmt.Errorf("nvml.h declares no %s", sym)
	}
	ret := strings.TrimSpace(m[1] + " " + m[2])
	var params []string
	for _, p := range strings.Split(m[3], ",") {
		p = strings.TrimSpace(p)
		if p == "void" || p == "" {
			continue
		}
		// Drop the parameter's name: the last identifier.
		name := regexp.MustCompile(`\w+$`).FindString(p)
		params = append(params, strings.TrimSpace(strings.TrimSuffix(p, name)))
	}
	return ret, params, nil
}
