package wire

import (
	"encoding/binary"
	"fmt"
	"maps"
	"slices"
)

// The binary form of a State, what host and guest exchange (the guest's
// Go runs in WebAssembly, where reflection-based JSON is slow): the magic
// "WBS1", then fields in order, every string and list as a uvarint length
// and its elements:
//
//	Dir, Umask, Vars (Name, Kind byte, flags byte, Str, List, Indexes as
//	zigzag varints, Map as sorted key/value pairs), Funcs (sorted
//	name/text pairs), Aliases (likewise), Options, ShellOptions, ErrTrap
//
// AppendState and DecodeBinaryState are each other's inverse; the host
// writes JSON (encoding/json of State) in snapshots.

const binaryMagic = "WBS1"

// Kind bytes of the binary form.
const (
	kindString byte = iota
	kindIndexed
	kindAssociative
	kindNameref
)

const (
	flagExported byte = 1 << iota
	flagReadOnly
	flagHasIndexes
	flagHasMap
)

// AppendState appends the binary form of st to b.
func AppendState(b []byte, st State) []byte {
	b = append(b, binaryMagic...)
	b = appendStr(b, st.Dir)
	b = binary.AppendUvarint(b, uint64(st.Umask))
	b = binary.AppendUvarint(b, uint64(len(st.Vars)))
	for _, v := range st.Vars {
		b = appendStr(b, v.Name)
		var kind byte
		switch v.Kind {
		case "indexed":
			kind = kindIndexed
		case "associative":
			kind = kindAssociative
		case "nameref":
			kind = kindNameref
		}
		var flags byte
		if v.Exported {
			flags |= flagExported
		}
		if v.ReadOnly {
			flags |= flagReadOnly
		}
		if v.Indexes != nil {
			flags |= flagHasIndexes
		}
		if v.Map != nil {
			flags |= flagHasMap
		}
		b = append(b, kind, flags)
		b = appendStr(b, v.Str)
		b = appendStrs(b, v.List)
		if v.Indexes != nil {
			b = binary.AppendUvarint(b, uint64(len(v.Indexes)))
			for _, n := range v.Indexes {
				b = binary.AppendVarint(b, int64(n))
			}
		}
		if v.Map != nil {
			b = appendPairs(b, v.Map)
		}
	}
	b = appendPairs(b, st.Funcs)
	b = appendPairs(b, st.Aliases)
	b = appendStrs(b, st.Options)
	b = appendStrs(b, st.ShellOptions)
	return appendStr(b, st.ErrTrap)
}

func appendStr(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

func appendStrs(b []byte, ss []string) []byte {
	b = binary.AppendUvarint(b, uint64(len(ss)))
	for _, s := range ss {
		b = appendStr(b, s)
	}
	return b
}

func appendPairs(b []byte, m map[string]string) []byte {
	b = binary.AppendUvarint(b, uint64(len(m)))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		b = appendStr(b, k)
		b = appendStr(b, m[k])
	}
	return b
}

// decoder reads the binary form; every length is checked against what is
// left, so a hostile input cannot make it allocate more than its own size
// or run past it.
type decoder struct {
	b   []byte
	err error
}

func (d *decoder) fail(format string, args ...any) {
	if d.err == nil {
		d.err = fmt.Errorf("%w: state: %s", ErrMalformed, fmt.Sprintf(format, args...))
	}
}

func (d *decoder) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	n, k := binary.Uvarint(d.b)
	if k <= 0 {
		d.fail("bad length")
		return 0
	}
	d.b = d.b[k:]
	return n
}

func (d *decoder) varint() int64 {
	if d.err != nil {
		return 0
	}
	n, k := binary.Varint(d.b)
	if k <= 0 {
		d.fail("bad number")
		return 0
	}
	d.b = d.b[k:]
	return n
}

// count reads a count of elements each at least min bytes long.
func (d *decoder) count(min int) int {
	n := d.uvarint()
	if d.err == nil && n > uint64(len(d.b)/max(min, 1)) {
		d.fail("%d elements in %d bytes", n, len(d.b))
		return 0
	}
	return int(n)
}

func (d *decoder) byte() byte {
	if d.err != nil {
		return 0
	}
	if len(d.b) == 0 {
		d.fail("truncated")
		return 0
	}
	c := d.b[0]
	d.b = d.b[1:]
	return c
}

func (d *decoder) str() string {
	n := d.uvarint()
	if d.err != nil {
		return ""
	}
	if n > uint64(len(d.b)) {
		d.fail("string of %d bytes in %d", n, len(d.b))
		return ""
	}
	s := string(d.b[:n])
	d.b = d.b[n:]
	return s
}

func (d *decoder) strs() []string {
	n := d.count(1)
	if n == 0 {
		return nil
	}
	out := make([]string, n)
	for i := range out {
		out[i] = d.str()
	}
	return out
}

func (d *decoder) pairs() map[string]string {
	n := d.count(2)
	m := make(map[string]string, n)
	for i := 0; i < n && d.err == nil; i++ {
		k := d.str()
		m[k] = d.str()
	}
	return m
}

// DecodeBinaryState decodes and checks the binary form of a state.
func DecodeBinaryState(b []byte) (State, error) {
	if len(b) < len(binaryMagic) || string(b[:len(binaryMagic)]) != binaryMagic {
		return State{}, fmt.Errorf("%w: state: no magic", ErrMalformed)
	}
	d := &decoder{b: b[len(binaryMagic):]}
	var st State
	st.Dir = d.str()
	umask := d.uvarint()
	if umask > 0o777 {
		d.fail("umask %o", umask)
	}
	st.Umask = uint32(umask)
	if n := d.count(4); n > 0 {
		st.Vars = make([]Var, n)
		for i := range st.Vars {
			v := &st.Vars[i]
			v.Name = d.str()
			switch kind := d.byte(); kind {
			case kindString:
				v.Kind = "string"
			case kindIndexed:
				v.Kind = "indexed"
			case kindAssociative:
				v.Kind = "associative"
			case kindNameref:
				v.Kind = "nameref"
			default:
				d.fail("variable kind %d", kind)
			}
			flags := d.byte()
			v.Exported, v.ReadOnly = flags&flagExported != 0, flags&flagReadOnly != 0
			v.Str = d.str()
			v.List = d.strs()
			if flags&flagHasIndexes != 0 {
				n := d.count(1)
				v.Indexes = make([]int, n)
				for j := range v.Indexes {
					x := d.varint()
					if x < 0 || x > 1<<31-1 {
						d.fail("array index %d", x)
					}
					v.Indexes[j] = int(x)
				}
			}
			if flags&flagHasMap != 0 {
				v.Map = d.pairs()
			}
			if d.err != nil {
				break
			}
		}
	}
	st.Funcs = d.pairs()
	st.Aliases = d.pairs()
	st.Options = d.strs()
	st.ShellOptions = d.strs()
	st.ErrTrap = d.str()
	if d.err == nil && len(d.b) != 0 {
		d.fail("%d bytes after the state", len(d.b))
	}
	if d.err != nil {
		return State{}, d.err
	}
	if err := st.Check(); err != nil {
		return State{}, err
	}
	return st, nil
}
