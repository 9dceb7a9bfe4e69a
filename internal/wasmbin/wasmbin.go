// Package wasmbin reads and rewrites the parts of a WebAssembly binary that
// wasmbox changes after the Go linker or before compiling: sections, data
// segments, globals, exports and the memory's limits. It decodes no code.
//
// Every function takes the binary as untrusted input: a malformed one gives
// an error wrapping ErrMalformed, never a panic.
package wasmbin

import (
	"bytes"
	"errors"
	"fmt"
)

// ErrMalformed reports a module that is not a well-formed wasm binary.
var ErrMalformed = errors.New("malformed wasm module")

// Section ids.
const (
	SecCustom    = 0
	SecType      = 1
	SecImport    = 2
	SecFunction  = 3
	SecTable     = 4
	SecMemory    = 5
	SecGlobal    = 6
	SecExport    = 7
	SecStart     = 8
	SecElement   = 9
	SecCode      = 10
	SecData      = 11
	SecDataCount = 12
)

// Export kinds.
const (
	KindFunc   = 0
	KindTable  = 1
	KindMemory = 2
	KindGlobal = 3
)

const (
	opI32Const = 0x41
	opI64Const = 0x42
	opF32Const = 0x43
	opF64Const = 0x44
	opGlobal   = 0x23
	opRefNull  = 0xd0
	opRefFunc  = 0xd2
	opEnd      = 0x0b

	// extended constant expressions
	opI32Add = 0x6a
	opI32Sub = 0x6b
	opI32Mul = 0x6c
	opI64Add = 0x7c
	opI64Sub = 0x7d
	opI64Mul = 0x7e

	opVecPrefix  = 0xfd
	vecV128Const = 12
)

var header = []byte("\x00asm\x01\x00\x00\x00")

// Section is one section of a module: its id and body (without the id and
// size bytes).
type Section struct {
	ID   byte
	Body []byte

	// sizeLen is how many bytes the size of the section took in the binary
	// Sections read it from (0 for a section built by hand). The Go linker
	// pads every section size to 5 bytes; Encode keeps that width, so that
	// Encode(Sections(b)) is b again.
	sizeLen int
}

// Sections splits a binary into its sections. The bodies alias b.
//
// Encode(Sections(b)) gives back b byte for byte: Sections remembers how
// wide each size was encoded, and Encode keeps that width as long as the
// (possibly replaced) body's size fits in it. A Section built as a
// literal gets the shortest encoding.
func Sections(b []byte) ([]Section, error) {
	if len(b) < 8 || !bytes.Equal(b[:8], header) {
		return nil, fmt.Errorf("%w: bad header", ErrMalformed)
	}
	var secs []Section
	for p := 8; p < len(b); {
		id := b[p]
		size, n, err := Uleb(b[p+1:])
		if err != nil {
			return nil, fmt.Errorf("%w: section at %d: %v", ErrMalformed, p, err)
		}
		from := p + 1 + n
		if uint64(from)+uint64(size) > uint64(len(b)) {
			return nil, fmt.Errorf("%w: section %d at %d overruns the file", ErrMalformed, id, p)
		}
		secs = append(secs, Section{ID: id, Body: b[from : from+int(size)], sizeLen: n})
		p = from + int(size)
	}
	return secs, nil
}

// Encode joins sections into a binary.
func Encode(secs []Section) []byte {
	n := len(header)
	for _, s := range secs {
		n += 6 + len(s.Body)
	}
	out := append(make([]byte, 0, n), header...)
	for _, s := range secs {
		out = append(out, s.ID)
		out = appendUlebWidth(out, uint32(len(s.Body)), s.sizeLen)
		out = append(out, s.Body...)
	}
	return out
}

// AppendSection appends a section with id and body to out.
func AppendSection(out []byte, id byte, body []byte) []byte {
	out = append(out, id)
	out = AppendUleb(out, uint32(len(body)))
	return append(out, body...)
}

// Find returns the index of the first section with id, or -1.
func Find(secs []Section, id byte) int {
	for i, s := range secs {
		if s.ID == id {
			return i
		}
	}
	return -1
}

// reader walks a section body.
type reader struct {
	b   []byte
	err error
}

func (r *reader) fail(format string, args ...any) {
	if r.err == nil {
		r.err = fmt.Errorf("%w: "+format, append([]any{ErrMalformed}, args...)...)
	}
}

func (r *reader) u32() uint32 {
	if r.err != nil {
		return 0
	}
	v, n, err := Uleb(r.b)
	if err != nil {
		r.fail("%v", err)
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *reader) byte1() byte {
	if r.err != nil {
		return 0
	}
	if len(r.b) == 0 {
		r.fail("truncated section")
		return 0
	}
	c := r.b[0]
	r.b = r.b[1:]
	return c
}

func (r *reader) bytes(n uint32) []byte {
	if r.err != nil {
		return nil
	}
	if uint64(n) > uint64(len(r.b)) {
		r.fail("%d bytes past the end of the section", n)
		return nil
	}
	v := r.b[:n]
	r.b = r.b[n:]
	return v
}

// count reads a vector length, checking it against the bytes left (every
// element takes at least one byte), so that a hostile count cannot make a
// caller allocate more than the input's size.
func (r *reader) count() uint32 {
	n := r.u32()
	if uint64(n) > uint64(len(r.b)) {
		r.fail("%d elements in %d bytes", n, len(r.b))
		return 0
	}
	return n
}

func (r *reader) name() string { return string(r.bytes(r.u32())) }

// Limits are the limits of a memory, in 64 KiB pages, or of a table.
type Limits struct {
	Min, Max uint64
	HasMax   bool
	Shared   bool // a shared memory (threads)
	Is64     bool // a 64-bit memory (memory64): Min and Max may pass 2^32
}

// limits reads memory or table limits.
func (r *reader) limits() Limits {
	flags := r.byte1()
	if flags > 7 {
		r.fail("limits flags %#x", flags)
		return Limits{}
	}
	l := Limits{HasMax: flags&1 != 0, Shared: flags&2 != 0, Is64: flags&4 != 0}
	num := func() uint64 {
		if l.Is64 {
			return r.u64()
		}
		return uint64(r.u32())
	}
	l.Min = num()
	if l.HasMax {
		l.Max = num()
	}
	return l
}

// u64 reads an unsigned 64-bit LEB128 number.
func (r *reader) u64() uint64 {
	var v uint64
	for i := 0; i < 10; i++ {
		c := r.byte1()
		if r.err != nil {
			return 0
		}
		if i == 9 && c > 1 {
			r.fail("LEB128 overflows u64")
			return 0
		}
		v |= uint64(c&0x7f) << (7 * i)
		if c&0x80 == 0 {
			return v
		}
	}
	r.fail("LEB128 too long")
	return 0
}

// constExpr reads a constant expression up to and including its end and
// returns it whole.
func (r *reader) constExpr() []byte {
	start := r.b
	for r.err == nil {
		op := r.byte1()
		switch op {
		case opEnd:
			return start[:len(start)-len(r.b)]
		case opI32Const, opGlobal, opRefFunc:
			r.u32v()
		case opI64Const:
			r.u64v()
		case opF32Const:
			r.bytes(4)
		case opF64Const:
			r.bytes(8)
		case opRefNull:
			r.byte1()
		case opI32Add, opI32Sub, opI32Mul, opI64Add, opI64Sub, opI64Mul:
			// extended constant expressions
		case opVecPrefix:
			if sub := r.u32(); sub != vecV128Const {
				r.fail("vector opcode %#x in a constant expression", sub)
			}
			r.bytes(16)
		default:
			r.fail("opcode %#x in a constant expression", op)
		}
	}
	return nil
}

// u32v and u64v skip a LEB128 number of up to 5 or 10 bytes, signed or not.
func (r *reader) u32v() { r.skipLeb(5) }
func (r *reader) u64v() { r.skipLeb(10) }

// s33 reads a block type's type index: a signed 33-bit LEB128 number.
func (r *reader) s33() int64 {
	var v int64
	for i := 0; i < 5; i++ {
		c := r.byte1()
		if r.err != nil {
			return 0
		}
		v |= int64(c&0x7f) << (7 * i)
		if c&0x80 == 0 {
			if shift := 7 * (i + 1); shift < 64 && c&0x40 != 0 {
				v |= -1 << shift
			}
			return v
		}
	}
	r.fail("LEB128 too long")
	return 0
}

func (r *reader) skipLeb(max int) {
	for i := 0; i < max; i++ {
		if r.byte1()&0x80 == 0 {
			return
		}
	}
	r.fail("LEB128 too long")
}

// Uleb decodes an unsigned 32-bit LEB128 number and its length.
func Uleb(b []byte) (uint32, int, error) {
	var v uint64
	for i := 0; i < 5; i++ {
		if i >= len(b) {
			return 0, 0, errors.New("truncated LEB128")
		}
		v |= uint64(b[i]&0x7f) << (7 * i)
		if b[i]&0x80 == 0 {
			if v > 0xffffffff {
				return 0, 0, errors.New("LEB128 overflows u32")
			}
			return uint32(v), i + 1, nil
		}
	}
	return 0, 0, errors.New("LEB128 too long")
}

// Sleb decodes a signed 32-bit LEB128 number and its length.
func Sleb(b []byte) (int32, int, error) {
	var v int64
	var shift uint
	for i := 0; i < 5; i++ {
		if i >= len(b) {
			return 0, 0, errors.New("truncated LEB128")
		}
		v |= int64(b[i]&0x7f) << shift
		shift += 7
		if b[i]&0x80 == 0 {
			if shift < 64 && b[i]&0x40 != 0 {
				v |= -1 << shift
			}
			if v < -1<<31 || v > 1<<31-1 {
				return 0, 0, errors.New("LEB128 overflows i32")
			}
			return int32(v), i + 1, nil
		}
	}
	return 0, 0, errors.New("LEB128 too long")
}

// AppendUleb appends v as unsigned LEB128.
func AppendUleb(b []byte, v uint32) []byte {
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if v != 0 {
			b = append(b, c|0x80)
			continue
		}
		return append(b, c)
	}
}

// appendUlebWidth appends v as unsigned LEB128 of at least width bytes
// (at most 5), padded with continuation bytes, which the format allows.
func appendUlebWidth(b []byte, v uint32, width int) []byte {
	width = min(width, 5)
	for i := 1; ; i++ {
		c := byte(v & 0x7f)
		v >>= 7
		if v != 0 || i < width {
			b = append(b, c|0x80)
			continue
		}
		return append(b, c)
	}
}

// AppendSleb appends v as signed LEB128.
func AppendSleb(b []byte, v int32) []byte {
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if (v == 0 && c&0x40 == 0) || (v == -1 && c&0x40 != 0) {
			return append(b, c)
		}
		b = append(b, c|0x80)
	}
}
