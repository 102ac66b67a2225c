package main

import (
	"bufio"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
)

// A Bindings is what a bindgen-generated Rust file (cudarc's sys/mod.rs,
// generated from NVIDIA's headers for each CUDA version) declares, each
// item with the CUDA versions its #[cfg] names (none: every version).
type Bindings struct {
	Aliases map[string][]item[string]    // pub type NAME = TYPE;
	Consts  map[string][]item[int64]     // pub const NAME: T = V; and enum variants
	Enums   map[string]bool              // enum type names
	Structs map[string][]item[[]field]   // pub struct NAME { fields } and pub union NAME { fields }
	Unions  map[string]bool              // the Structs that are unions
	Funcs   map[string][]item[[]string]  // pub fn NAME(params) in extern "C"
	Returns map[string][]item[string]    // each Funcs item's return type, "" for none
	alias   map[string][]item[[2]string] // pub const NAME: T = ENUM::VARIANT;
}

type item[T any] struct {
	versions map[int]bool // nil: every version
	v        T
}

type field struct{ name, typ string }

func (it item[T]) in(version int) bool { return it.versions == nil || it.versions[version] }

// lookup returns the declaration of name that applies to version.
func lookup[T any](m map[string][]item[T], name string, version int) (T, bool) {
	for _, it := range m[name] {
		if it.in(version) {
			return it.v, true
		}
	}
	var zero T
	return zero, false
}

var (
	reFeature = regexp.MustCompile(`feature = "cuda-(\d+)"`)
	reAlias   = regexp.MustCompile(`^pub type (\w+) = (.+);$`)
	reUse     = regexp.MustCompile(`^pub use self::(\w+) as (\w+);$`)
	reConst   = regexp.MustCompile(`^pub const (\w+): [\w:]+ = (-?\d+)\w*;$`)
	reVarCon  = regexp.MustCompile(`^pub const (\w+): \w+ =\s*(\w+)::(\w+);$`)
	reVariant = regexp.MustCompile(`^(\w+) = (-?\d+),$`)
	reField   = regexp.MustCompile(`^pub (\w+): (.+),$`)
	reOpen    = regexp.MustCompile(`^pub (enum|struct|union) (\w+) \{$`)
	reFunc    = regexp.MustCompile(`^pub fn (\w+)\((.*)\)(?: -> (.+))?;$`)
)

// ParseBindings reads one bindgen file.
func ParseBindings(r io.Reader) (*Bindings, error) {
	b := &Bindings{Aliases: map[string][]item[string]{}, Consts: map[string][]item[int64]{}, Enums: map[string]bool{},
		Structs: map[string][]item[[]field]{}, Unions: map[string]bool{}, Funcs: map[string][]item[[]string]{},
		Returns: map[string][]item[string]{}, alias: map[string][]item[[2]string]{}}
	p := parser{b: b}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		p.line(strings.TrimSpace(sc.Text()))
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	b.resolveVariantConsts()
	return b, nil
}

// A parser holds the state of the line scan: a #[cfg] being read, the
// enum or struct being read, and a function declaration being joined.
type parser struct {
	b          *Bindings
	cfg        string // attribute text so far
	inCfg      bool
	pending    map[int]bool // versions of the next item
	block      string       // "enum", "struct" or "union"
	blockName  string
	blockVers  map[int]bool
	fields     []field
	fn         string // a pub fn spanning lines
	memberVers map[int]bool
}

func (p *parser) line(l string) {
	switch {
	case p.inCfg || strings.HasPrefix(l, "#[cfg("):
		p.attr(l)
	case p.fn != "":
		p.joinFunc(l)
	case p.block != "":
		p.member(l)
	default:
		p.top(l)
	}
}

// attr collects a #[cfg(...)] attribute, which may span lines.
func (p *parser) attr(l string) {
	p.cfg += l
	p.inCfg = !strings.HasSuffix(l, ")]")
	if p.inCfg {
		return
	}
	var vers map[int]bool
	for _, m := range reFeature.FindAllStringSubmatch(p.cfg, -1) {
		if vers == nil {
			vers = map[int]bool{}
		}
		n, _ := strconv.Atoi(m[1])
		vers[n] = true
	}
	p.cfg = ""
	if p.block != "" {
		p.memberVers = vers
	} else {
		p.pending = vers
	}
}

func (p *parser) take() map[int]bool {
	v := p.pending
	p.pending = nil
	return v
}

func (p *parser) top(l string) {
	b := p.b
	if m := reAlias.FindStringSubmatch(l); m != nil {
		b.Aliases[m[1]] = append(b.Aliases[m[1]], item[string]{p.take(), m[2]})
	} else if m := reUse.FindStringSubmatch(l); m != nil {
		b.Aliases[m[2]] = append(b.Aliases[m[2]], item[string]{p.take(), m[1]})
	} else if m := reConst.FindStringSubmatch(l); m != nil {
		n, _ := strconv.ParseInt(m[2], 10, 64)
		b.Consts[m[1]] = append(b.Consts[m[1]], item[int64]{p.take(), n})
	} else if m := reVarCon.FindStringSubmatch(l); m != nil {
		b.alias[m[1]] = append(b.alias[m[1]], item[[2]string]{p.take(), [2]string{m[2], m[3]}})
	} else if m := reOpen.FindStringSubmatch(l); m != nil {
		p.block, p.blockName, p.blockVers, p.fields = m[1], m[2], p.take(), nil
		if m[1] == "enum" {
			b.Enums[m[2]] = true
		}
	} else if strings.HasPrefix(l, "pub fn ") {
		p.joinFunc(l)
	} else if strings.HasPrefix(l, "#[") || l == "" || strings.HasPrefix(l, "//") {
		return
	} else {
		p.pending = nil
	}
}

// member reads one line inside an enum or struct.
func (p *parser) member(l string) {
	if l == "}" {
		if p.block != "enum" {
			p.b.Structs[p.blockName] = append(p.b.Structs[p.blockName], item[[]field]{p.blockVers, p.fields})
			p.b.Unions[p.blockName] = p.block == "union"
		}
		p.block = ""
		return
	}
	vers := p.memberVers
	p.memberVers = nil
	if p.block == "enum" {
		if m := reVariant.FindStringSubmatch(l); m != nil {
			n, _ := strconv.ParseInt(m[2], 10, 64)
			p.b.Consts[m[1]] = append(p.b.Consts[m[1]], item[int64]{intersect(p.blockVers, vers), n})
		}
		return
	}
	if m := reField.FindStringSubmatch(l); m != nil {
		p.fields = append(p.fields, field{strings.TrimSuffix(m[1], "_"), m[2]})
	}
}

// joinFunc gathers a function declaration up to its semicolon.
func (p *parser) joinFunc(l string) {
	if p.fn != "" && !strings.HasSuffix(p.fn, "(") {
		p.fn += " "
	}
	p.fn += l
	if !strings.HasSuffix(l, ";") {
		return
	}
	decl := strings.ReplaceAll(strings.ReplaceAll(p.fn, "( ", "("), ", )", ")")
	p.fn = ""
	m := reFunc.FindStringSubmatch(decl)
	if m == nil {
		p.pending = nil
		return
	}
	var params []string
	for a := range strings.SplitSeq(m[2], ",") {
		if a = strings.TrimSpace(a); a != "" {
			_, t, _ := strings.Cut(a, ": ")
			params = append(params, t)
		}
	}
	vers := p.take()
	p.b.Funcs[m[1]] = append(p.b.Funcs[m[1]], item[[]string]{vers, params})
	p.b.Returns[m[1]] = append(p.b.Returns[m[1]], item[string]{vers, strings.TrimSpace(m[3])})
}

func intersect(a, b map[int]bool) map[int]bool {
	if a == nil {
		return b
	}
	if b == nil {
		return a
	}
	out := map[int]bool{}
	for v := range a {
		if b[v] {
			out[v] = true
		}
	}
	return out
}

// resolveVariantConsts turns `pub const A: E = E::B;` into a constant
// with B's value, in the versions that declare B.
func (b *Bindings) resolveVariantConsts() {
	for name, items := range b.alias {
		for _, it := range items {
			for _, v := range b.Consts[it.v[1]] {
				b.Consts[name] = append(b.Consts[name], item[int64]{intersect(it.versions, v.versions), v.v})
			}
		}
	}
}

// Class returns the class ('p' pointer, 'i' integer, 'f' float) and size
// in bytes of Rust type t as bindgen writes a C type, in version.
func (b *Bindings) Class(t string, version int) (byte, int, error) {
	t = strings.TrimPrefix(strings.TrimSpace(t), "::core::ffi::")
	switch {
	case strings.HasPrefix(t, "*mut ") || strings.HasPrefix(t, "*const ") || strings.HasPrefix(t, "Option<"):
		return 'p', 8, nil
	}
	if c, n, ok := primitive(t); ok {
		return c, n, nil
	}
	if b.Enums[t] {
		return 'i', 4, nil
	}
	if a, ok := lookup(b.Aliases, t, version); ok {
		return b.Class(a, version)
	}
	return 0, 0, fmt.Errorf("type %s: unknown in CUDA %d", t, version)
}

func primitive(t string) (byte, int, bool) {
	switch t {
	case "c_char", "c_schar", "c_uchar", "i8", "u8":
		return 'i', 1, true
	case "c_short", "c_ushort", "i16", "u16":
		return 'i', 2, true
	case "c_int", "c_uint", "i32", "u32":
		return 'i', 4, true
	case "c_long", "c_ulong", "c_longlong", "c_ulonglong", "i64", "u64", "usize", "isize":
		return 'i', 8, true
	case "f32", "c_float":
		return 'f', 4, true
	case "f64", "c_double":
		return 'f', 8, true
	}
	return 0, 0, false
}
