package jqcmd

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"math/big"
	"os"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/itchyny/gojq"
	"github.com/wasmbox/wasmbox/tools/internal/cmd"
)

func init() { cmd.Register("jq", jqMain) }

const jqHelp = `Usage:	jq [OPTIONS] FILTER [FILES...]

	jq is a tool for processing JSON inputs, applying the given filter to
	its JSON text inputs and producing the filter's results as JSON on
	standard output (gojq engine, jq 1.6 output format).

	Some of the options include:
	  -c               compact instead of pretty-printed output;
	  -n               use ` + "`null`" + ` as the single input value;
	  -e               set the exit status code based on the output;
	  -s               read (slurp) all inputs into an array; apply filter to it;
	  -r               output raw strings, not JSON texts;
	  -j               like -r, without a newline after each output;
	  -a               output ASCII with \uXXXX escapes;
	  -S               sort keys of objects on output;
	  -R               read raw lines, not JSON texts;
	  --tab            use tabs for indentation;
	  --indent n       use n spaces for indentation (max 7 spaces);
	  --arg a v        set variable $a to value <v>;
	  --argjson a v    set variable $a to JSON value <v>;
	  --slurpfile a f  set variable $a to an array of JSON texts read from <f>;
	  --rawfile a f    set variable $a to a string consisting of the contents of <f>;
	  --args           remaining arguments are string arguments, not files;
	  --jsonargs       remaining arguments are JSON arguments, not files;
`

// jqKeyOrder remembers the order in which object keys were written, in
// the input documents and in the program's object constructors, so that
// output objects keep jq's insertion order although gojq stores objects
// as Go maps.
type jqKeyOrder struct {
	sets        map[string][]string // sorted key set -> order first seen
	setsInOrder [][]string          // the sets recorded, first seen first
	rank        map[string]int      // key -> first appearance
}

func newJQKeyOrder() *jqKeyOrder {
	return &jqKeyOrder{sets: map[string][]string{}, rank: map[string]int{}}
}

func setKey(keys []string) string {
	s := slices.Clone(keys)
	sort.Strings(s)
	return strings.Join(s, "\x00")
}

func (o *jqKeyOrder) record(keys []string) {
	if len(keys) == 0 {
		return
	}
	k := setKey(keys)
	if _, ok := o.sets[k]; !ok {
		o.sets[k] = slices.Clone(keys)
		o.setsInOrder = append(o.setsInOrder, o.sets[k])
	}
}

func (o *jqKeyOrder) addRank(keys []string) {
	for _, k := range keys {
		if _, ok := o.rank[k]; !ok {
			o.rank[k] = len(o.rank)
		}
	}
}

// order returns the keys of m in output order.
func (o *jqKeyOrder) order(m map[string]any, sortKeys bool) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	if sortKeys {
		return keys
	}
	if known, ok := o.sets[strings.Join(keys, "\x00")]; ok {
		return known
	}
	sort.SliceStable(keys, func(i, j int) bool {
		ri, oki := o.rank[keys[i]]
		rj, okj := o.rank[keys[j]]
		switch {
		case oki && okj:
			return ri < rj
		case oki != okj:
			return oki
		}
		return false
	})
	return keys
}

// recordProgram walks the parsed query (by reflection, the AST is plain
// structs) and records the keys of object constructors.
func (o *jqKeyOrder) recordProgram(q *gojq.Query) []string {
	var all []string
	var walk func(v reflect.Value)
	seen := map[uintptr]bool{}
	walk = func(v reflect.Value) {
		switch v.Kind() {
		case reflect.Pointer:
			if v.IsNil() || seen[v.Pointer()] {
				return
			}
			seen[v.Pointer()] = true
			if obj, ok := v.Interface().(*gojq.Object); ok {
				var keys []string
				constant := true
				for _, kv := range obj.KeyVals {
					switch {
					case kv.Key != "":
						keys = append(keys, strings.TrimPrefix(kv.Key, "$"))
					case kv.KeyString != nil && kv.KeyString.Queries == nil:
						keys = append(keys, kv.KeyString.Str)
					default:
						constant = false
					}
				}
				if constant {
					o.record(keys)
				}
				all = append(all, keys...)
			}
			walk(v.Elem())
		case reflect.Struct:
			for i := 0; i < v.NumField(); i++ {
				if v.Type().Field(i).IsExported() {
					walk(v.Field(i))
				}
			}
		case reflect.Slice:
			for i := 0; i < v.Len(); i++ {
				walk(v.Index(i))
			}
		}
	}
	walk(reflect.ValueOf(q))
	return all
}

// jqDecoder parses JSON texts into gojq values, recording key order.
// It reads either through dec (a stream), or, when the whole input is in
// memory and every text of it is valid JSON (jqScanTexts), from data,
// whose texts end at ends: encoding/json's validation, one scanner step
// through a function value per byte, and its copy of each text were
// about a quarter of jq's time in wasm on a large document.
type jqDecoder struct {
	dec   *json.Decoder
	order *jqKeyOrder
	name  string
	p     *jqParser
	data  []byte
	ends  []int
	pos   int // the end of the last text taken from data
}

func (d *jqDecoder) next() (any, error) {
	var raw []byte
	if d.dec == nil {
		if len(d.ends) == 0 {
			d.data = nil
			return nil, io.EOF
		}
		start := jqSkipSpace(d.data, d.pos)
		raw, d.pos, d.ends = d.data[start:d.ends[0]], d.ends[0], d.ends[1:]
	} else {
		var msg json.RawMessage
		if err := d.dec.Decode(&msg); err != nil {
			return nil, err
		}
		raw = msg
	}
	if d.p == nil {
		d.p = &jqParser{order: d.order, intern: map[string]string{}}
	}
	d.p.s, d.p.i = raw, 0
	return d.p.value(), nil
}

// offset is the input offset after the last text (json.Decoder's
// InputOffset), for the line of an error message.
func (d *jqDecoder) offset() int64 {
	if d.dec == nil {
		return int64(d.pos)
	}
	return d.dec.InputOffset()
}

// jqWholeMax is the largest input file read whole for the fast path;
// a larger one streams through json.Decoder as before.
const jqWholeMax = 64 << 20

// jqReadWhole reads r whole when it is a regular file of at most
// jqWholeMax bytes. ok is false, and nothing is read, otherwise. A read
// error is returned with the bytes read before it.
func jqReadWhole(r io.Reader) (data []byte, err error, ok bool) {
	f, isFile := r.(interface{ Stat() (fs.FileInfo, error) })
	if !isFile {
		return nil, nil, false
	}
	fi, serr := f.Stat()
	if serr != nil || !fi.Mode().IsRegular() || fi.Size() > jqWholeMax {
		return nil, nil, false
	}
	data = make([]byte, 0, fi.Size()+1)
	for {
		if len(data) == cap(data) {
			data = append(data, 0)[:len(data)]
		}
		n, rerr := r.Read(data[len(data):cap(data)])
		data = data[:len(data)+n]
		if rerr == io.EOF {
			return data, nil, true
		}
		if rerr != nil {
			return data, rerr, true
		}
	}
}

// errReader returns err on every read.
type errReader struct{ err error }

func (r errReader) Read([]byte) (int, error) { return 0, r.err }

func jqSkipSpace(s []byte, i int) int {
	for i < len(s) && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r') {
		i++
	}
	return i
}

// jqMaxDepth is encoding/json's nesting limit; jqScanTexts refuses the
// limit itself, so that json.Decoder reports it.
const jqMaxDepth = 10000

// jqScanTexts returns where each JSON text of s ends, when s is a
// sequence of valid JSON texts exactly as json.Decoder reads them (texts
// may follow each other without white space: "1 2", "{}[]", "truefalse";
// a number ends at the first byte that cannot continue it, so "01" is 0
// then 1). ok is false for anything json.Decoder would refuse, and for
// whatever this scanner does not know: the caller then decodes with
// json.Decoder, whose errors and output before them are jq's.
func jqScanTexts(s []byte) (ends []int, ok bool) {
	i := 0
	for {
		i = jqSkipSpace(s, i)
		if i == len(s) {
			return ends, true
		}
		end, ok := jqScanValue(s, i)
		if !ok {
			return nil, false
		}
		ends = append(ends, end)
		i = end
	}
}

// jqScanValue returns the end of the JSON value at s[i:], without
// recursion (the containers open are on a stack).
func jqScanValue(s []byte, i int) (int, bool) {
	var stack []byte
	ok := true
	for {
		// A value starts at i (after white space).
		i = jqSkipSpace(s, i)
		if i >= len(s) {
			return 0, false
		}
		ended := true
		switch c := s[i]; {
		case c == '{' || c == '[':
			closer := byte('}')
			if c == '[' {
				closer = ']'
			}
			i = jqSkipSpace(s, i+1)
			if i < len(s) && s[i] == closer {
				i++
				break
			}
			if len(stack)+1 >= jqMaxDepth {
				return 0, false
			}
			stack = append(stack, c)
			ended = false
			if c == '{' {
				if i, ok = jqScanKey(s, i); !ok {
					return 0, false
				}
			}
		case c == '"':
			if i, ok = jqScanString(s, i); !ok {
				return 0, false
			}
		case c == 't':
			if i, ok = jqScanLiteral(s, i, "true"); !ok {
				return 0, false
			}
		case c == 'f':
			if i, ok = jqScanLiteral(s, i, "false"); !ok {
				return 0, false
			}
		case c == 'n':
			if i, ok = jqScanLiteral(s, i, "null"); !ok {
				return 0, false
			}
		default:
			if i, ok = jqScanNumber(s, i); !ok {
				return 0, false
			}
		}
		if !ended {
			continue
		}
		// A value ended at i: close containers until one wants more.
		for {
			if len(stack) == 0 {
				return i, true
			}
			i = jqSkipSpace(s, i)
			if i >= len(s) {
				return 0, false
			}
			top := stack[len(stack)-1]
			if s[i] == ',' {
				i++
				if top == '{' {
					if i, ok = jqScanKey(s, jqSkipSpace(s, i)); !ok {
						return 0, false
					}
				}
				break
			}
			if (top == '{' && s[i] == '}') || (top == '[' && s[i] == ']') {
				stack = stack[:len(stack)-1]
				i++
				continue
			}
			return 0, false
		}
	}
}

// jqScanKey takes an object key and its colon at s[i:].
func jqScanKey(s []byte, i int) (int, bool) {
	if i >= len(s) || s[i] != '"' {
		return 0, false
	}
	i, ok := jqScanString(s, i)
	if !ok {
		return 0, false
	}
	i = jqSkipSpace(s, i)
	if i >= len(s) || s[i] != ':' {
		return 0, false
	}
	return i + 1, true
}

// jqScanString takes the string at s[i:] (s[i] is its quote): bytes
// from 0x20 on, any of them (json.Decoder takes invalid UTF-8), and the
// escapes JSON has.
func jqScanString(s []byte, i int) (int, bool) {
	for i++; i < len(s); {
		c := s[i]
		switch {
		case c == '"':
			return i + 1, true
		case c < 0x20:
			return 0, false
		case c == '\\':
			if i+1 >= len(s) {
				return 0, false
			}
			switch s[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if i+6 > len(s) {
					return 0, false
				}
				for _, h := range s[i+2 : i+6] {
					if !('0' <= h && h <= '9' || 'a' <= h && h <= 'f' || 'A' <= h && h <= 'F') {
						return 0, false
					}
				}
				i += 6
			default:
				return 0, false
			}
		default:
			i++
		}
	}
	return 0, false
}

func jqScanLiteral(s []byte, i int, lit string) (int, bool) {
	if len(s)-i < len(lit) || string(s[i:i+len(lit)]) != lit {
		return 0, false
	}
	return i + len(lit), true
}

// jqScanNumber takes -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?.
func jqScanNumber(s []byte, i int) (int, bool) {
	digits := func(i int) (int, bool) {
		start := i
		for i < len(s) && '0' <= s[i] && s[i] <= '9' {
			i++
		}
		return i, i > start
	}
	if i < len(s) && s[i] == '-' {
		i++
	}
	if i >= len(s) {
		return 0, false
	}
	var ok bool
	switch {
	case s[i] == '0':
		i++
	case '1' <= s[i] && s[i] <= '9':
		i, _ = digits(i)
	default:
		return 0, false
	}
	if i < len(s) && s[i] == '.' {
		if i, ok = digits(i + 1); !ok {
			return 0, false
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		if i, ok = digits(i); !ok {
			return 0, false
		}
	}
	return i, true
}

// jqParser builds gojq values from validated JSON. It is kept across the
// texts of an input, and spares the allocations that dominate a large
// document (GC work is dear in wasm, where the collector runs on the one
// thread): object keys are interned, the keys of an object are collected
// on a shared stack, and an object with the same keys in the same order
// as the one before it records nothing new in the key order.
type jqParser struct {
	s      []byte
	i      int
	order  *jqKeyOrder
	intern map[string]string // object keys
	keys   []string          // the keys of the objects being parsed
	elems  []any             // the elements of the arrays being parsed
	last   []string          // the keys of the last object recorded
}

func (p *jqParser) ws() {
	for p.i < len(p.s) && (p.s[p.i] == ' ' || p.s[p.i] == '\t' || p.s[p.i] == '\n' || p.s[p.i] == '\r') {
		p.i++
	}
}

// value parses already-validated JSON.
func (p *jqParser) value() any {
	p.ws()
	switch c := p.s[p.i]; {
	case c == '{':
		p.i++
		m := map[string]any{}
		base := len(p.keys)
		for {
			p.ws()
			if p.s[p.i] == '}' {
				p.i++
				break
			}
			if p.s[p.i] == ',' {
				p.i++
				continue
			}
			k := p.key()
			p.ws()
			p.i++ // ':'
			v := p.value()
			if _, dup := m[k]; !dup {
				p.keys = append(p.keys, k)
			}
			m[k] = v
		}
		if keys := p.keys[base:]; !slices.Equal(keys, p.last) {
			p.order.addRank(keys)
			p.order.record(keys)
			p.last = append(p.last[:0], keys...)
		}
		p.keys = p.keys[:base]
		return m
	case c == '[':
		// The elements go on the shared stack first, so that the array
		// is allocated once, at its size (no growth copies).
		p.i++
		base := len(p.elems)
		for {
			p.ws()
			if p.s[p.i] == ']' {
				p.i++
				break
			}
			if p.s[p.i] == ',' {
				p.i++
				continue
			}
			v := p.value()
			p.elems = append(p.elems, v)
		}
		a := make([]any, len(p.elems)-base)
		copy(a, p.elems[base:])
		clear(p.elems[base:])
		p.elems = p.elems[:base]
		return a
	case c == '"':
		return p.str()
	case c == 't':
		p.i += 4
		return true
	case c == 'f':
		p.i += 5
		return false
	case c == 'n':
		p.i += 4
		return nil
	}
	start := p.i
	isInt := true
	for p.i < len(p.s) && strings.IndexByte("+-0123456789.eE", p.s[p.i]) >= 0 {
		if c := p.s[p.i]; c == '.' || c == 'e' || c == 'E' {
			isInt = false
		}
		p.i++
	}
	lit := p.s[start:p.i]
	if isInt && len(lit) <= 16 && string(lit) != "-0" {
		if n, ok := jqAtoi(lit); ok {
			return n
		}
	}
	f, _ := strconv.ParseFloat(string(lit), 64)
	return f
}

// jqAtoi parses a JSON integer of at most 16 digits (no overflow)
// without converting it to a string first.
func jqAtoi(b []byte) (int, bool) {
	neg := len(b) > 0 && b[0] == '-'
	if neg {
		b = b[1:]
	}
	if len(b) == 0 {
		return 0, false
	}
	n := 0
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	if neg {
		n = -n
	}
	return n, true
}

// key parses an object key, interning short simple ones: a large
// document repeats the same few keys in every object.
func (p *jqParser) key() string {
	end := p.i + 1
	for end < len(p.s) && end-p.i <= 64 && p.s[end] != '"' && p.s[end] != '\\' && p.s[end] < 0x80 {
		end++
	}
	if end < len(p.s) && p.s[end] == '"' {
		raw := p.s[p.i+1 : end]
		if k, ok := p.intern[string(raw)]; ok {
			p.i = end + 1
			return k
		}
		if len(p.intern) < 4096 {
			k := string(raw)
			p.intern[k] = k
			p.i = end + 1
			return k
		}
	}
	return p.str()
}

func (p *jqParser) str() string {
	end := p.i + 1
	simple := true
	for end < len(p.s) && p.s[end] != '"' {
		if p.s[end] == '\\' {
			simple = false
			end++
		}
		end++
	}
	raw := p.s[p.i : end+1]
	p.i = end + 1
	if simple && utf8.Valid(raw) {
		return string(raw[1 : len(raw)-1])
	}
	var s string
	json.Unmarshal(raw, &s)
	return s
}

type jqOpts struct {
	indent   int // -1 compact
	tab      bool
	ascii    bool
	sortKeys bool
	raw      bool
	join     bool
	order    *jqKeyOrder
}

// jqFormatNumber prints a number like jq 1.6 (17 significant digits,
// shortest form, exponent when the decimal point is far away).
func jqFormatNumber(f float64) string {
	switch {
	case math.IsNaN(f):
		return "null"
	case math.IsInf(f, 1):
		return "1.7976931348623157e+308"
	case math.IsInf(f, -1):
		return "-1.7976931348623157e+308"
	case f == 0:
		if math.Signbit(f) {
			return "-0"
		}
		return "0"
	}
	e := strconv.FormatFloat(f, 'e', -1, 64)
	neg := e[0] == '-'
	if neg {
		e = e[1:]
	}
	mant, exps, _ := strings.Cut(e, "e")
	exp, _ := strconv.Atoi(exps)
	digits := strings.Replace(mant, ".", "", 1)
	decpt := exp + 1
	var b strings.Builder
	if neg {
		b.WriteByte('-')
	}
	switch {
	case decpt <= -4 || decpt > len(digits)+15:
		b.WriteByte(digits[0])
		if len(digits) > 1 {
			b.WriteByte('.')
			b.WriteString(digits[1:])
		}
		b.WriteByte('e')
		x := decpt - 1
		if x < 0 {
			b.WriteByte('-')
			x = -x
		} else {
			b.WriteByte('+')
		}
		if x < 10 {
			b.WriteByte('0')
		}
		b.WriteString(strconv.Itoa(x))
	case decpt <= 0:
		b.WriteString("0.")
		b.WriteString(strings.Repeat("0", -decpt))
		b.WriteString(digits)
	case decpt >= len(digits):
		b.WriteString(digits)
		b.WriteString(strings.Repeat("0", decpt-len(digits)))
	default:
		b.WriteString(digits[:decpt])
		b.WriteByte('.')
		b.WriteString(digits[decpt:])
	}
	return b.String()
}

func jqWriteString(w *bufio.Writer, s string, ascii bool) {
	w.WriteByte('"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch c {
			case '"':
				w.WriteString(`\"`)
			case '\\':
				w.WriteString(`\\`)
			case '\n':
				w.WriteString(`\n`)
			case '\t':
				w.WriteString(`\t`)
			case '\r':
				w.WriteString(`\r`)
			case '\b':
				w.WriteString(`\b`)
			case '\f':
				w.WriteString(`\f`)
			default:
				if c < 0x20 || c == 0x7f {
					fmt.Fprintf(w, `\u%04x`, c)
				} else {
					w.WriteByte(c)
				}
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		i += size
		if !ascii {
			w.WriteRune(r)
			continue
		}
		if r >= 0x10000 {
			r1, r2 := utf16.EncodeRune(r)
			fmt.Fprintf(w, `\u%04x\u%04x`, r1, r2)
		} else {
			fmt.Fprintf(w, `\u%04x`, r)
		}
	}
	w.WriteByte('"')
}

func (o *jqOpts) newline(w *bufio.Writer, level int) {
	if o.indent < 0 {
		return
	}
	w.WriteByte('\n')
	if o.tab {
		for i := 0; i < level; i++ {
			w.WriteByte('\t')
		}
		return
	}
	for i := 0; i < level*o.indent; i++ {
		w.WriteByte(' ')
	}
}

func (o *jqOpts) encode(w *bufio.Writer, v any, level int) {
	switch v := v.(type) {
	case nil:
		w.WriteString("null")
	case bool:
		if v {
			w.WriteString("true")
		} else {
			w.WriteString("false")
		}
	case int:
		if v > -1e17 && v < 1e17 {
			w.WriteString(strconv.Itoa(v))
		} else {
			w.WriteString(jqFormatNumber(float64(v)))
		}
	case float64:
		w.WriteString(jqFormatNumber(v))
	case *big.Int:
		f, _ := new(big.Float).SetInt(v).Float64()
		w.WriteString(jqFormatNumber(f))
	case string:
		jqWriteString(w, v, o.ascii)
	case []any:
		if len(v) == 0 {
			w.WriteString("[]")
			return
		}
		w.WriteByte('[')
		for i, x := range v {
			if i > 0 {
				w.WriteByte(',')
			}
			o.newline(w, level+1)
			o.encode(w, x, level+1)
		}
		o.newline(w, level)
		w.WriteByte(']')
	case map[string]any:
		if len(v) == 0 {
			w.WriteString("{}")
			return
		}
		w.WriteByte('{')
		for i, k := range o.order.order(v, o.sortKeys) {
			if i > 0 {
				w.WriteByte(',')
			}
			o.newline(w, level+1)
			jqWriteString(w, k, o.ascii)
			w.WriteByte(':')
			if o.indent >= 0 {
				w.WriteByte(' ')
			}
			o.encode(w, v[k], level+1)
		}
		o.newline(w, level)
		w.WriteByte('}')
	default:
		// Any other Go value (from a custom function) goes through JSON.
		b, err := json.Marshal(v)
		if err != nil {
			w.WriteString("null")
			return
		}
		w.Write(b)
	}
}

// jqInputs yields input values from files or stdin.
type jqInputs struct {
	e       *cmd.Env
	files   []string
	idx     int
	dec     *jqDecoder
	closeFn func()
	raw     bool
	lr      *lineReader
	order   *jqKeyOrder
	err     error // a fatal input error (bad JSON, missing file)
	status  int
	cur     string
	lines   *lineCounter
}

// lineCounter remembers where the newlines of an input are, for the
// "(at <stdin>:LINE)" of error messages.
type lineCounter struct {
	r   io.Reader
	pos int64
	nl  []int64
}

func (c *lineCounter) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	for i, b := range p[:n] {
		if b == '\n' {
			c.nl = append(c.nl, c.pos+int64(i))
		}
	}
	c.pos += int64(n)
	return n, err
}

// lineAt counts the newlines at or before offset.
func (c *lineCounter) lineAt(offset int64) int {
	return sort.Search(len(c.nl), func(i int) bool { return c.nl[i] > offset })
}

func (in *jqInputs) open() bool {
	for in.idx < len(in.files) {
		name := in.files[in.idx]
		in.idx++
		r, closeFn, err := openInput(in.e, name)
		if err != nil {
			fmt.Fprintf(in.e.Stderr, "jq: error: Could not open file %s: %s\n", name, strerror(err))
			in.status = 2
			continue
		}
		in.closeFn = closeFn
		in.cur = name
		if !in.raw {
			if data, rerr, ok := jqReadWhole(r); ok {
				in.lines = &lineCounter{r: bytes.NewReader(data)}
				if rerr == nil {
					if ends, valid := jqScanTexts(data); valid {
						io.Copy(io.Discard, in.lines) // the newlines, for error lines
						in.dec = &jqDecoder{order: in.order, name: name, data: data, ends: ends}
						return true
					}
				}
				// Invalid JSON or a read error: json.Decoder reads the
				// same bytes (then the error) and reports as it always did.
				var src io.Reader = in.lines
				if rerr != nil {
					in.lines.r = io.MultiReader(bytes.NewReader(data), errReader{rerr})
				}
				d := json.NewDecoder(src)
				d.UseNumber()
				in.dec = &jqDecoder{dec: d, order: in.order, name: name}
				return true
			}
		}
		in.lines = &lineCounter{r: r}
		r = in.lines
		if in.raw {
			in.lr = newLineReader(r, '\n')
		} else {
			d := json.NewDecoder(r)
			d.UseNumber()
			in.dec = &jqDecoder{dec: d, order: in.order, name: name}
		}
		return true
	}
	return false
}

// next returns the next input; ok is false at the end or after an error.
func (in *jqInputs) next() (any, bool) {
	for {
		if in.dec == nil && in.lr == nil {
			if !in.open() {
				return nil, false
			}
		}
		if in.raw {
			line, err := in.lr.next()
			if err == nil {
				return strings.TrimSuffix(string(line), "\n"), true
			}
			in.lr = nil
		} else {
			v, err := in.dec.next()
			if err == nil {
				return v, true
			}
			in.dec = nil
			if err != io.EOF {
				in.closeFn()
				in.err = err
				return nil, false
			}
		}
		in.closeFn()
	}
}

// readAll reads every remaining input (for -s).
func (in *jqInputs) readAllRaw() string {
	var b strings.Builder
	for in.idx < len(in.files) {
		name := in.files[in.idx]
		in.idx++
		data, err := readAllInput(in.e, name)
		if err != nil {
			fmt.Fprintf(in.e.Stderr, "jq: error: Could not open file %s: %s\n", name, strerror(err))
			in.status = 2
			continue
		}
		b.Write(data)
	}
	return b.String()
}

type jqIter struct{ in *jqInputs }

func (it *jqIter) Next() (any, bool) { return it.in.next() }

func jqMain(e *cmd.Env) int {
	args := e.Args[1:]
	o := &jqOpts{indent: 2, order: newJQKeyOrder()}
	var nullInput, slurp, rawIn, exitStatus bool
	var filter *string
	var files []string
	var varNames []string
	var varValues []any
	named := map[string]any{}
	var positional []any
	restMode := "" // "args" or "jsonargs"
	usage := func(msg string) int {
		fmt.Fprintf(e.Stderr, "jq: error: %s\nUse jq --help for help with command-line options,\nor see the jq manpage, or online docs  at https://stedolan.github.io/jq\n", msg)
		return 2
	}
	addVar := func(name string, v any) {
		varNames = append(varNames, "$"+name)
		varValues = append(varValues, v)
		named[name] = v
	}
	for i := 0; i < len(args); i++ {
		a := args[i]
		need := func(n int) ([]string, bool) {
			if i+n >= len(args) {
				return nil, false
			}
			v := args[i+1 : i+1+n]
			i += n
			return v, true
		}
		if restMode != "" && (!strings.HasPrefix(a, "-") || a == "-") && filter != nil {
			if restMode == "args" {
				positional = append(positional, a)
			} else {
				v, err := jqParseJSONArg(a, o.order)
				if err != nil {
					return usage("Invalid JSON text passed to --jsonargs")
				}
				positional = append(positional, v)
			}
			continue
		}
		if a == "--" {
			for _, r := range args[i+1:] {
				if filter == nil {
					s := r
					filter = &s
				} else {
					files = append(files, r)
				}
			}
			break
		}
		if len(a) > 1 && a[0] == '-' && a[1] != '-' {
			// Short options, possibly clustered.
			for _, c := range a[1:] {
				switch c {
				case 'r':
					o.raw = true
				case 'j':
					o.raw, o.join = true, true
				case 'c':
					o.indent = -1
				case 'n':
					nullInput = true
				case 's':
					slurp = true
				case 'e':
					exitStatus = true
				case 'S':
					o.sortKeys = true
				case 'a':
					o.ascii = true
				case 'R':
					rawIn = true
				case 'M', 'C':
				case 'h':
					fmt.Fprint(e.Stdout, jqHelp)
					return 0
				default:
					return usage(fmt.Sprintf("Unknown arguments: %s", a))
				}
			}
			continue
		}
		switch a {
		case "--raw-output":
			o.raw = true
		case "--join-output":
			o.raw, o.join = true, true
		case "--compact-output":
			o.indent = -1
		case "--null-input":
			nullInput = true
		case "--slurp":
			slurp = true
		case "--exit-status":
			exitStatus = true
		case "--sort-keys":
			o.sortKeys = true
		case "--ascii-output":
			o.ascii = true
		case "--raw-input":
			rawIn = true
		case "--monochrome-output", "--color-output", "--unbuffered", "--seq":
		case "--tab":
			o.tab, o.indent = true, 1
		case "--indent":
			v, ok := need(1)
			if !ok {
				return usage("--indent takes one parameter")
			}
			n, err := strconv.Atoi(v[0])
			if err != nil || n < 0 {
				return usage("--indent takes a number")
			}
			if n > 7 {
				return usage("Cannot indent more than 7 characters")
			}
			o.indent = n
			if n == 0 {
				o.indent = -1
			}
		case "--arg":
			v, ok := need(2)
			if !ok {
				return usage("--arg takes two parameters (e.g. --arg varname value)")
			}
			addVar(v[0], v[1])
		case "--argjson":
			v, ok := need(2)
			if !ok {
				return usage("--argjson takes two parameters (e.g. --argjson varname text)")
			}
			val, err := jqParseJSONArg(v[1], o.order)
			if err != nil {
				return usage("Invalid JSON text passed to --argjson")
			}
			addVar(v[0], val)
		case "--slurpfile", "--rawfile":
			v, ok := need(2)
			if !ok {
				return usage(fmt.Sprintf("%s takes two parameters (e.g. %s varname filename)", a, a))
			}
			data, err := readAllInput(e, v[1])
			if err != nil {
				return usage(fmt.Sprintf("Could not open %s: %s", v[1], strerror(err)))
			}
			if a == "--rawfile" {
				addVar(v[0], string(data))
				continue
			}
			d := json.NewDecoder(bytes.NewReader(data))
			d.UseNumber()
			jd := &jqDecoder{dec: d, order: o.order}
			vals := []any{}
			for {
				x, err := jd.next()
				if err == io.EOF {
					break
				}
				if err != nil {
					return usage(fmt.Sprintf("Invalid JSON text in %s", v[1]))
				}
				vals = append(vals, x)
			}
			addVar(v[0], vals)
		case "--args":
			restMode = "args"
		case "--jsonargs":
			restMode = "jsonargs"
		case "--help":
			fmt.Fprint(e.Stdout, jqHelp)
			return 0
		case "--version":
			fmt.Fprintln(e.Stdout, "jq-1.6")
			return 0
		default:
			if strings.HasPrefix(a, "--") {
				return usage(fmt.Sprintf("Unknown arguments: %s", a))
			}
			if filter == nil {
				s := a
				filter = &s
			} else {
				files = append(files, a)
			}
		}
	}
	if filter == nil {
		fmt.Fprint(e.Stderr, jqHelp)
		return 2
	}
	q, progKeys, err := jqProgram(*filter, o.order)
	if err != nil {
		var pe *gojq.ParseError
		if errors.As(err, &pe) {
			off := max(0, min(len(*filter), pe.Offset-len(jqPrelude)))
			line := 1 + strings.Count((*filter)[:off], "\n")
			tok := "$end"
			if pe.Token != "" {
				tok = "'" + pe.Token + "'"
			}
			lines := strings.Split(*filter, "\n")
			fmt.Fprintf(e.Stderr, "jq: error: syntax error, unexpected %s (Unix shell quoting issues?) at <top-level>, line %d:\n%s\njq: 1 compile error\n",
				tok, line, lines[min(line-1, len(lines)-1)])
			return 3
		}
		fmt.Fprintf(e.Stderr, "jq: error: %s\njq: 1 compile error\n", err)
		return 3
	}
	if positional == nil {
		positional = []any{}
	}
	namedAny := map[string]any{}
	for k, v := range named {
		namedAny[k] = v
	}
	varNames = append(varNames, "$ARGS")
	varValues = append(varValues, map[string]any{"positional": positional, "named": namedAny})
	in := &jqInputs{e: e, files: inputs(files), raw: rawIn, order: o.order}
	code, err := gojq.Compile(q,
		gojq.WithVariables(varNames),
		gojq.WithInputIter(&jqIter{in}),
		gojq.WithEnvironLoader(os.Environ),
		gojq.WithFunction("keys_unsorted", 0, 0, func(v any, _ []any) any {
			switch v := v.(type) {
			case map[string]any:
				keys := o.order.order(v, false)
				out := make([]any, len(keys))
				for i, k := range keys {
					out[i] = k
				}
				return out
			case []any:
				out := make([]any, len(v))
				for i := range v {
					out[i] = i
				}
				return out
			}
			return fmt.Errorf("%s has no keys", jqTypeName(v))
		}),
	)
	if err != nil {
		fmt.Fprintf(e.Stderr, "jq: error: %s\njq: 1 compile error\n", err)
		return 3
	}
	t := newTool(e)
	w := t.out
	status := 0
	var last any
	produced := false
	run := func(input any) bool {
		iter := code.Run(input, varValues...)
		for {
			v, ok := iter.Next()
			if !ok {
				return true
			}
			if err, isErr := v.(error); isErr {
				var he *gojq.HaltError
				if errors.As(err, &he) {
					if hv := he.Value(); hv != nil {
						w.Flush()
						if s, ok := hv.(string); ok {
							fmt.Fprint(e.Stderr, s)
						} else {
							var eb bytes.Buffer
							bw := bufio.NewWriter(&eb)
							(&jqOpts{indent: -1, order: o.order}).encode(bw, hv, 0)
							bw.Flush()
							fmt.Fprintf(e.Stderr, "%s\n", eb.String())
						}
					}
					status = he.ExitCode()
					return false
				}
				w.Flush()
				fmt.Fprintf(e.Stderr, "jq: error (at %s): %s\n", jqWhere(in), jqErrorText(err))
				status = 5
				return true // an error ends this input's run; the next input goes on
			}
			produced, last = true, v
			if s, ok := v.(string); ok && o.raw {
				w.WriteString(s)
			} else {
				o.encode(w, v, 0)
			}
			if !o.join {
				w.WriteByte('\n')
			}
		}
	}
	o.order.addRank(progKeys)
	switch {
	case nullInput:
		run(nil)
	case slurp && rawIn:
		s := in.readAllRaw()
		if in.status == 0 {
			run(s)
		}
	case slurp:
		all := []any{}
		for {
			v, ok := in.next()
			if !ok {
				break
			}
			all = append(all, v)
		}
		if in.err == nil {
			run(all)
		}
	default:
		for {
			v, ok := in.next()
			if !ok {
				break
			}
			if !run(v) {
				break
			}
		}
	}
	if in.err != nil {
		w.Flush()
		fmt.Fprintf(e.Stderr, "jq: error (at %s): %s\n", jqWhere(in), jqErrorText(in.err))
		status = 2
	}
	if in.status != 0 && status == 0 {
		status = in.status
	}
	if exitStatus && status == 0 {
		switch {
		case !produced:
			status = 4
		case last == nil || last == false:
			status = 1
		}
	}
	return t.flush(status)
}

// jqPrelude redefines the builtins whose gojq versions walk objects in
// sorted key order, so that they follow the insertion order like jq.
const jqPrelude = `def to_entries: [keys_unsorted[] as $k | {key: $k, value: .[$k]}];
def with_entries(f): to_entries | map(f) | from_entries;
def recurse: def r: ., (if type == "object" then .[keys_unsorted[]] elif type == "array" then .[] else empty end | r); r;
def paths: path(recurse) | select(. != []);
def paths(node_filter): . as $dot | paths | select(. as $p | $dot | getpath($p) | node_filter);
def leaf_paths: paths(scalars);
def map(f): [.[] | f];
def add: reduce .[] as $x (null; . + $x);
`

// jqIterFunc iterates like .[] but over an object's values in insertion
// order; it is a path expression, so .[] |= f and path(.[]) still work.
const jqIterFunc = "_wasmbox_iter"

// jqProgram parses filter after jqPrelude, rewrites its iterations
// (jqOrderedIter) and records the key order of its object constructions;
// it returns the program and every key it names (see recordProgram). A
// parse error is the one of the whole text, prelude included, as the
// offsets of a *gojq.ParseError say.
//
// The prelude is the same for every run: it is parsed, rewritten and
// walked once, when the package initializes (in wasmbox that is in the
// module's snapshot), and only the filter is parsed per run.
func jqProgram(filter string, order *jqKeyOrder) (*gojq.Query, []string, error) {
	pre, preErr := jqPreludeOnce()
	q, err := gojq.Parse(filter)
	if err != nil || preErr != nil || q.Meta != nil || len(q.Imports) > 0 {
		// The whole text, as jq reads it: its error, offsets included.
		return jqProgramSlow(filter, order)
	}
	jqRewriteIters(q)
	for _, keys := range pre.sets {
		order.record(keys)
	}
	keys := append(slices.Clone(pre.keys), order.recordProgram(q)...)
	q.FuncDefs = append(slices.Clone(pre.defs), q.FuncDefs...)
	return q, keys, nil
}

// jqProgramSlow is jqProgram parsing prelude and filter as one text.
func jqProgramSlow(filter string, order *jqKeyOrder) (*gojq.Query, []string, error) {
	q, err := gojq.Parse(jqPrelude + filter)
	if err != nil {
		return nil, nil, err
	}
	if err := jqOrderedIter(q); err != nil {
		return nil, nil, err
	}
	return q, order.recordProgram(q), nil
}

// jqPreludeDefs is the prelude parsed and rewritten, with what
// recordProgram finds in it.
type jqPreludeDefs struct {
	defs []*gojq.FuncDef // the iteration function, then the prelude's
	sets [][]string      // the constant key sets, in the order recorded
	keys []string        // every key named
}

var jqPreludeOnce = sync.OnceValues(func() (*jqPreludeDefs, error) {
	q, err := gojq.Parse(jqPrelude + ".")
	if err != nil {
		return nil, err
	}
	if err := jqOrderedIter(q); err != nil {
		return nil, err
	}
	defs := &gojq.Query{FuncDefs: q.FuncDefs}
	o := newJQKeyOrder()
	keys := o.recordProgram(defs)
	return &jqPreludeDefs{defs: q.FuncDefs, sets: o.setsInOrder, keys: keys}, nil
})

// Initialized with the package: the work is then in wasmbox's snapshot.
func init() { _, _ = jqPreludeOnce() }

// jqOrderedIter rewrites every X[] of the program into (X | _wasmbox_iter)
// and defines that function, so that iterating an object follows the
// recorded key order (gojq's own .[] walks sorted keys).
func jqOrderedIter(q *gojq.Query) error {
	def, err := gojq.Parse("def " + jqIterFunc + `: if type == "object" then .[keys_unsorted[]] else .[] end; .`)
	if err != nil {
		return err
	}
	jqRewriteIters(q)
	q.FuncDefs = append([]*gojq.FuncDef{def.FuncDefs[0]}, q.FuncDefs...)
	return nil
}

// jqRewriteIters rewrites every X[] of q into (X | _wasmbox_iter).
func jqRewriteIters(q *gojq.Query) {
	seen := map[*gojq.Term]bool{}
	var walk func(v reflect.Value)
	walk = func(v reflect.Value) {
		switch v.Kind() {
		case reflect.Pointer:
			if v.IsNil() {
				return
			}
			if t, ok := v.Interface().(*gojq.Term); ok {
				if seen[t] {
					return
				}
				seen[t] = true
				walk(v.Elem())
				jqRewriteIter(t)
				return
			}
			walk(v.Elem())
		case reflect.Struct:
			for i := 0; i < v.NumField(); i++ {
				if v.Type().Field(i).IsExported() {
					walk(v.Field(i))
				}
			}
		case reflect.Slice:
			for i := 0; i < v.Len(); i++ {
				walk(v.Index(i))
			}
		}
	}
	walk(reflect.ValueOf(q))
}

// jqRewriteIter turns the first iteration suffix of t (and, through the
// new right-hand term, every later one) into a call of jqIterFunc.
func jqRewriteIter(t *gojq.Term) {
	for i, sfx := range t.SuffixList {
		if !sfx.Iter || sfx.Index != nil {
			continue
		}
		left := *t
		left.SuffixList = t.SuffixList[:i]
		right := &gojq.Term{Type: gojq.TermTypeFunc, Func: &gojq.Func{Name: jqIterFunc}, SuffixList: t.SuffixList[i+1:]}
		jqRewriteIter(right)
		*t = gojq.Term{Type: gojq.TermTypeQuery, Query: &gojq.Query{
			Left:  &gojq.Query{Term: &left},
			Op:    gojq.OpPipe,
			Right: &gojq.Query{Term: right},
		}}
		return
	}
}

func jqTypeName(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case string:
		return "string"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return "number"
}

func jqWhere(in *jqInputs) string {
	name := in.cur
	if name == "-" || name == "" {
		name = "<stdin>"
	}
	line := 0
	if in.lines != nil {
		off := in.lines.pos
		if in.dec != nil {
			off = in.dec.offset()
		}
		line = in.lines.lineAt(off)
	}
	return name + ":" + strconv.Itoa(line)
}

// jqErrorText capitalises gojq's messages the way jq prints them.
func jqErrorText(err error) string {
	s := err.Error()
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return "Cannot parse input: " + s
	}
	if s == "break" {
		return "No more inputs"
	}
	if rest, ok := strings.CutPrefix(s, "cannot iterate over: "); ok {
		return "Cannot iterate over " + rest
	}
	if len(s) > 0 && s[0] >= 'a' && s[0] <= 'z' {
		return strings.ToUpper(s[:1]) + s[1:]
	}
	return s
}

func jqParseJSONArg(s string, order *jqKeyOrder) (any, error) {
	d := json.NewDecoder(strings.NewReader(s))
	d.UseNumber()
	jd := &jqDecoder{dec: d, order: order}
	return jd.next()
}
