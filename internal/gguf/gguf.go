// Package gguf writes GGUF files, the model format of llama.cpp and the
// servers built on it (Ollama among them), so that tests can serve a model
// they made themselves: no model can be downloaded where kvtier is tested.
//
// A GGUF file (version 3, little-endian) is a header (magic "GGUF",
// version, tensor count, metadata count), the metadata as typed key-value
// pairs, one info record per tensor (name, dimensions with the fastest
// first, element type, offset into the data section), zero padding to the
// alignment, and the tensors' data, each starting at a multiple of the
// alignment (32 bytes unless general.alignment says otherwise).
//
// Only what a test model needs is written: scalar, string and array
// metadata, and tensors of 32-bit floats.
//
// Note: a reader is not part of the package; the tests hold a small one to
// check what is written.
package gguf

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"math"
)

// Alignment is the alignment of the tensor data section and of every
// tensor in it, GGUF's default (general.alignment is not written).
const Alignment = 32

// version is the GGUF version written.
const version = 3

// Metadata value types, as GGUF numbers them.
const (
	typeUint32  uint32 = 4
	typeInt32   uint32 = 5
	typeFloat32 uint32 = 6
	typeBool    uint32 = 7
	typeString  uint32 = 8
	typeArray   uint32 = 9
	typeUint64  uint32 = 10
)

// tensorF32 is ggml's element type number of 32-bit floats.
const tensorF32 uint32 = 0

// A KV is one metadata pair. Value is a uint32, int32, uint64, float32,
// bool, string, []string, []int32 or []float32.
type KV struct {
	Key   string
	Value any
}

// A Tensor is a named tensor of 32-bit floats. Dims lists its dimensions
// fastest first, as ggml does: a matrix of R rows of C elements is
// {C, R}, and Data holds R·C values, row after row.
type Tensor struct {
	Name string
	Dims []uint64
	Data []float32
}

// elements is the product of t's dimensions.
func (t Tensor) elements() uint64 {
	n := uint64(1)
	for _, d := range t.Dims {
		n *= d
	}
	return n
}

// A File is the metadata and tensors of one GGUF file, in file order.
type File struct {
	KV      []KV
	Tensors []Tensor
}

// Write writes f to w in GGUF version 3. It fails, before writing
// anything, on a metadata value of an unsupported type or a tensor whose
// data does not match its dimensions.
func (f *File) Write(w io.Writer) error {
	if err := f.check(); err != nil {
		return err
	}
	e := &encoder{w: bufio.NewWriter(w)}
	e.u32(0x46554747) // "GGUF" read as a little-endian uint32
	e.u32(version)
	e.u64(uint64(len(f.Tensors)))
	e.u64(uint64(len(f.KV)))
	for _, kv := range f.KV {
		e.str(kv.Key)
		e.value(kv.Value)
	}
	var off uint64
	for _, t := range f.Tensors {
		e.str(t.Name)
		e.u32(uint32(len(t.Dims)))
		for _, d := range t.Dims {
			e.u64(d)
		}
		e.u32(tensorF32)
		e.u64(off)
		off = align(off + 4*t.elements())
	}
	e.pad()
	for _, t := range f.Tensors {
		for _, v := range t.Data {
			e.u32(math.Float32bits(v))
		}
		e.pad()
	}
	if e.err != nil {
		return fmt.Errorf("gguf: %w", e.err)
	}
	if err := e.w.Flush(); err != nil {
		return fmt.Errorf("gguf: %w", err)
	}
	return nil
}

// check reports the first metadata value or tensor Write cannot write.
func (f *File) check() error {
	for _, kv := range f.KV {
		switch kv.Value.(type) {
		case uint32, int32, uint64, float32, bool, string, []string, []int32, []float32:
		default:
			return fmt.Errorf("gguf: metadata %q: unsupported type %T", kv.Key, kv.Value)
		}
	}
	for _, t := range f.Tensors {
		if len(t.Dims) == 0 || len(t.Dims) > 4 {
			return fmt.Errorf("gguf: tensor %q: %d dimensions, want 1 to 4", t.Name, len(t.Dims))
		}
		if n := t.elements(); n != uint64(len(t.Data)) {
			return fmt.Errorf("gguf: tensor %q: dimensions %v hold %d values, data has %d", t.Name, t.Dims, n, len(t.Data))
		}
	}
	return nil
}

// align rounds n up to a multiple of Alignment.
func align(n uint64) uint64 { return (n + Alignment - 1) / Alignment * Alignment }

// An encoder writes GGUF's little-endian primitives, keeping the first
// error and the count of bytes written (for padding).
type encoder struct {
	w   *bufio.Writer
	n   uint64
	err error
}

func (e *encoder) bytes(b []byte) {
	if e.err != nil {
		return
	}
	_, e.err = e.w.Write(b)
	e.n += uint64(len(b))
}

func (e *encoder) u32(v uint32) { e.bytes(binary.LittleEndian.AppendUint32(nil, v)) }
func (e *encoder) u64(v uint64) { e.bytes(binary.LittleEndian.AppendUint64(nil, v)) }

// str writes a GGUF string: its length as a uint64, then its bytes.
func (e *encoder) str(s string) {
	e.u64(uint64(len(s)))
	e.bytes([]byte(s))
}

// pad writes zeros up to the next multiple of Alignment.
func (e *encoder) pad() { e.bytes(make([]byte, align(e.n)-e.n)) }

// value writes a metadata value: its type, then the value.
func (e *encoder) value(v any) {
	switch v := v.(type) {
	case uint32:
		e.u32(typeUint32)
		e.u32(v)
	case int32:
		e.u32(typeInt32)
		e.u32(uint32(v))
	case uint64:
		e.u32(typeUint64)
		e.u64(v)
	case float32:
		e.u32(typeFloat32)
		e.u32(math.Float32bits(v))
	case bool:
		e.u32(typeBool)
		if v {
			e.bytes([]byte{1})
		} else {
			e.bytes([]byte{0})
		}
	case string:
		e.u32(typeString)
		e.str(v)
	case []string:
		e.array(typeString, len(v), func(i int) { e.str(v[i]) })
	case []int32:
		e.array(typeInt32, len(v), func(i int) { e.u32(uint32(v[i])) })
	case []float32:
		e.array(typeFloat32, len(v), func(i int) { e.u32(math.Float32bits(v[i])) })
	}
}

// array writes an array value: its type, element type, length, elements.
func (e *encoder) array(elem uint32, n int, each func(int)) {
	e.u32(typeArray)
	e.u32(elem)
	e.u64(uint64(n))
	for i := range n {
		each(i)
	}
}
