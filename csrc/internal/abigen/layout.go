package main

import (
	"fmt"
	"strings"
)

// structFacts writes the size of each struct the shim declares and the
// offset and size of each of its fields, laid out by C's rules.
func structFacts(v int, b *Bindings, want shimLists) ([]string, error) {
	var out []string
	for _, s := range want.structs {
		fields, union, ok := b.structOf(s, v)
		if !ok {
			return nil, fmt.Errorf("CUDA %d declares no struct %s", v, s)
		}
		size, _, _, err := b.layout(fields, union, v)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", s, err)
		}
		out = append(out, fmt.Sprintf("%d struct %s %d", v, s, size))
		for _, f := range want.fields {
			if f[0] != s {
				continue
			}
			o, err := b.fieldAt(fields, union, f[1], v)
			if err != nil {
				return nil, fmt.Errorf("CUDA %d: %s: %w", v, s, err)
			}
			out = append(out, fmt.Sprintf("%d field %s.%s %d %d", v, s, f[1], o[0], o[1]))
		}
	}
	return out, nil
}

// fieldAt returns the offset and size of the field path (a.b: field b
// of the struct that field a is) within a struct of fields.
func (b *Bindings) fieldAt(fields []field, union bool, path string, v int) ([2]int, error) {
	name, rest, nested := strings.Cut(path, ".")
	_, _, offs, err := b.layout(fields, union, v)
	if err != nil {
		return [2]int{}, err
	}
	o, ok := offs[name]
	if !ok {
		return [2]int{}, fmt.Errorf("no field %s", name)
	}
	if !nested {
		return o, nil
	}
	for _, f := range fields {
		if f.name != name {
			continue
		}
		inner, u, ok := b.structOf(f.typ, v)
		if !ok {
			return [2]int{}, fmt.Errorf("field %s is no struct", name)
		}
		in, err := b.fieldAt(inner, u, rest, v)
		return [2]int{o[0] + in[0], in[1]}, err
	}
	return [2]int{}, fmt.Errorf("no field %s", name)
}

// structOf follows aliases from name to a struct or union declaration.
func (b *Bindings) structOf(name string, v int) (fields []field, union, ok bool) {
	for range 8 {
		if fs, ok := lookup(b.Structs, name, v); ok {
			return fs, b.Unions[name], true
		}
		a, ok := lookup(b.Aliases, name, v)
		if !ok {
			return nil, false, false
		}
		name = a
	}
	return nil, false, false
}

// layout returns a struct's (or a union's) size, alignment and each
// field's offset and size, by C's rules.
func (b *Bindings) layout(fields []field, union bool, v int) (int, int, map[string][2]int, error) {
	offs := map[string][2]int{}
	off, end, align := 0, 0, 1
	for _, f := range fields {
		size, al, err := b.sizeAlign(f.typ, v)
		if err != nil {
			return 0, 0, nil, fmt.Errorf("field %s: %w", f.name, err)
		}
		if union {
			off = 0
		}
		off = (off + al - 1) / al * al
		offs[f.name] = [2]int{off, size}
		off += size
		end = max(end, off)
		align = max(align, al)
	}
	return (end + align - 1) / align * align, align, offs, nil
}

func (b *Bindings) sizeAlign(t string, v int) (int, int, error) {
	if fs, union, ok := b.structOf(t, v); ok {
		size, align, _, err := b.layout(fs, union, v)
		return size, align, err
	}
	_, n, err := b.Class(t, v)
	return n, n, err
}
