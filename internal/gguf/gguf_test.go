package gguf

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"reflect"
	"strings"
	"testing"
)

// decoded is what readGGUF reads back from a file.
type decoded struct {
	version uint32
	kv      map[string]any
	keys    []string
	tensors map[string]Tensor
	offsets map[string]uint64 // absolute file offsets of the tensors' data
}

// readGGUF is an independent GGUF reader, enough to check Write.
func readGGUF(t *testing.T, b []byte) decoded {
	t.Helper()
	d := &decoder{b: b}
	if m := d.u32(); m != 0x46554747 || string(b[:4]) != "GGUF" {
		t.Fatalf("magic %q, want GGUF", b[:4])
	}
	out := decoded{version: d.u32(), kv: map[string]any{}, tensors: map[string]Tensor{}, offsets: map[string]uint64{}}
	nt, nkv := d.u64(), d.u64()
	for range nkv {
		k := d.str()
		out.keys = append(out.keys, k)
		out.kv[k] = d.value(d.u32())
	}
	type info struct {
		name string
		dims []uint64
		off  uint64
	}
	var infos []info
	for range nt {
		in := info{name: d.str()}
		for range d.u32() {
			in.dims = append(in.dims, d.u64())
		}
		if typ := d.u32(); typ != tensorF32 {
			t.Fatalf("tensor %s: type %d, want F32", in.name, typ)
		}
		in.off = d.u64()
		infos = append(infos, in)
	}
	base := align(uint64(d.off))
	for _, in := range infos {
		n := Tensor{Dims: in.dims}.elements()
		start := base + in.off
		data := make([]float32, n)
		for i := range data {
			data[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[start+4*uint64(i):]))
		}
		out.tensors[in.name] = Tensor{Name: in.name, Dims: in.dims, Data: data}
		out.offsets[in.name] = start
	}
	if d.err != nil {
		t.Fatalf("reading back: %v", d.err)
	}
	return out
}

type decoder struct {
	b   []byte
	off int
	err error
}

func (d *decoder) next(n int) []byte {
	if d.err != nil || d.off+n > len(d.b) {
		d.err = io.ErrUnexpectedEOF
		return make([]byte, n)
	}
	d.off += n
	return d.b[d.off-n : d.off]
}

func (d *decoder) u32() uint32 { return binary.LittleEndian.Uint32(d.next(4)) }
func (d *decoder) u64() uint64 { return binary.LittleEndian.Uint64(d.next(8)) }
func (d *decoder) str() string { return string(d.next(int(d.u64()))) }

func (d *decoder) value(typ uint32) any {
	switch typ {
	case typeUint32:
		return d.u32()
	case typeInt32:
		return int32(d.u32())
	case typeUint64:
		return d.u64()
	case typeFloat32:
		return math.Float32frombits(d.u32())
	case typeBool:
		return d.next(1)[0] == 1
	case typeString:
		return d.str()
	case typeArray:
		elem, n := d.u32(), d.u64()
		var out []any
		for range n {
			out = append(out, d.value(elem))
		}
		return out
	}
	d.err = fmt.Errorf("unknown value type %d", typ)
	return nil
}

func TestWriteRoundTrip(t *testing.T) {
	t.Parallel()
	f := &File{
		KV: []KV{
			{"u32", uint32(7)}, {"i32", int32(-3)}, {"u64", uint64(1 << 40)},
			{"f32", float32(0.5)}, {"yes", true}, {"no", false}, {"s", "héllo"},
			{"strs", []string{"a", "", "▁b"}}, {"ints", []int32{1, -2}}, {"floats", []float32{1.5}},
		},
		Tensors: []Tensor{
			{Name: "odd", Dims: []uint64{3}, Data: []float32{1, 2, 3}},
			{Name: "mat", Dims: []uint64{2, 2}, Data: []float32{1, -1, 0.25, 8}},
		},
	}
	var buf bytes.Buffer
	if err := f.Write(&buf); err != nil {
		t.Fatal(err)
	}
	got := readGGUF(t, buf.Bytes())
	if got.version != 3 {
		t.Errorf("version %d, want 3", got.version)
	}
	want := map[string]any{
		"u32": uint32(7), "i32": int32(-3), "u64": uint64(1 << 40), "f32": float32(0.5),
		"yes": true, "no": false, "s": "héllo",
		"strs": []any{"a", "", "▁b"}, "ints": []any{int32(1), int32(-2)}, "floats": []any{float32(1.5)},
	}
	if !reflect.DeepEqual(got.kv, want) {
		t.Errorf("metadata\n got %v\nwant %v", got.kv, want)
	}
	for _, w := range f.Tensors {
		g := got.tensors[w.Name]
		if !reflect.DeepEqual(g.Dims, w.Dims) || !reflect.DeepEqual(g.Data, w.Data) {
			t.Errorf("tensor %s: got %v %v, want %v %v", w.Name, g.Dims, g.Data, w.Dims, w.Data)
		}
		if off := got.offsets[w.Name]; off%Alignment != 0 {
			t.Errorf("tensor %s at offset %d, not a multiple of %d", w.Name, off, Alignment)
		}
	}
	if buf.Len()%Alignment != 0 {
		t.Errorf("file length %d not padded to %d", buf.Len(), Alignment)
	}
}

func TestWriteRefuses(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		f    File
		want string
	}{
		{"value type", File{KV: []KV{{"x", 1}}}, `metadata "x": unsupported type int`},
		{"short data", File{Tensors: []Tensor{{Name: "t", Dims: []uint64{2, 2}, Data: []float32{1}}}}, `tensor "t": dimensions [2 2] hold 4 values, data has 1`},
		{"no dims", File{Tensors: []Tensor{{Name: "t"}}}, `tensor "t": 0 dimensions`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var buf bytes.Buffer
			err := tc.f.Write(&buf)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
			if buf.Len() != 0 {
				t.Errorf("wrote %d bytes before refusing", buf.Len())
			}
		})
	}
}
