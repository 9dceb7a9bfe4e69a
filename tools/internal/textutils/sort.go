package textutils

import (
	"bytes"
	"errors"
	"fmt"
	"hash/fnv"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/wasmbox/wasmbox/tools/internal/cmd"
)

func init() { cmd.Register("sort", sortMain) }

const sortHelp = `Write sorted concatenation of all FILE(s) to standard output.
With no FILE, or when FILE is -, read standard input.

Ordering options:
  -b, --ignore-leading-blanks  ignore leading blanks
  -d, --dictionary-order      consider only blanks and alphanumeric characters
  -f, --ignore-case           fold lower case to upper case characters
  -g, --general-numeric-sort  compare according to general numerical value
  -i, --ignore-nonprinting    consider only printable characters
  -M, --month-sort            compare (unknown) < 'JAN' < ... < 'DEC'
  -h, --human-numeric-sort    compare human readable numbers (e.g., 2K 1G)
  -n, --numeric-sort          compare according to string numerical value
  -R, --random-sort           shuffle, but group identical keys
  -r, --reverse               reverse the result of comparisons
  -V, --version-sort          natural sort of (version) numbers within text

Other options:
  -c, --check               check for sorted input; do not sort
  -C, --check=quiet         like -c, but do not report first bad line
  -k, --key=KEYDEF          sort via a key; KEYDEF gives location and type
  -m, --merge               merge already sorted files; do not sort
  -o, --output=FILE         write result to FILE instead of standard output
  -s, --stable              stabilize sort by disabling last-resort comparison
  -t, --field-separator=SEP  use SEP instead of non-blank to blank transition
  -u, --unique              output only the first of an equal run
  -z, --zero-terminated     line delimiter is NUL, not newline

KEYDEF is F[.C][OPTS][,F[.C][OPTS]] for start and stop position, where F is a
field number and C a character position in the field; both are origin 1, and
the stop position defaults to the line's end.  OPTS is one or more
single-letter ordering options [bdfgiMhnRrV], which override global ordering
options for that key.
`

var sortOpts = []optDef{
	{'b', "ignore-leading-blanks", noArg},
	{'d', "dictionary-order", noArg},
	{'f', "ignore-case", noArg},
	{'g', "general-numeric-sort", noArg},
	{'i', "ignore-nonprinting", noArg},
	{'M', "month-sort", noArg},
	{'h', "human-numeric-sort", noArg},
	{'n', "numeric-sort", noArg},
	{'R', "random-sort", noArg},
	{'r', "reverse", noArg},
	{'V', "version-sort", noArg},
	{0, "sort", reqArg},
	{'c', "check", optArg},
	{'C', "", noArg},
	{'k', "key", reqArg},
	{'m', "merge", noArg},
	{'o', "output", reqArg},
	{'s', "stable", noArg},
	{'t', "field-separator", reqArg},
	{'u', "unique", noArg},
	{'z', "zero-terminated", noArg},
	{'S', "buffer-size", reqArg},
	{'T', "temporary-directory", reqArg},
	{0, "parallel", reqArg},
	{0, "batch-size", reqArg},
	{0, "compress-program", reqArg},
	{0, "random-source", reqArg},
	{0, "files0-from", reqArg},
	{0, "debug", noArg},
}

// sortKey is one -k key (or the whole line), GNU's keyfield.
type sortKey struct {
	sword, schar int // start field and character (0-based)
	eword, echar int // end field (0-based; -1: end of line); echar 0: end of field
	skipSB       bool
	skipEB       bool
	numeric      bool
	general      bool
	human        bool
	month        bool
	version      bool
	random       bool
	reverse      bool
	fold         bool
	dict         bool
	nonprint     bool
}

func (k *sortKey) hasOpts() bool {
	return k.skipSB || k.skipEB || k.numeric || k.general || k.human || k.month || k.version ||
		k.random || k.reverse || k.fold || k.dict || k.nonprint
}

// setOpt applies an option letter; it reports false for an unknown one.
func (k *sortKey) setOpt(c byte, start bool) bool {
	switch c {
	case 'b':
		if start {
			k.skipSB = true
		} else {
			k.skipEB = true
		}
	case 'd':
		k.dict = true
	case 'f':
		k.fold = true
	case 'g':
		k.general = true
	case 'i':
		k.nonprint = true
	case 'M':
		k.month = true
	case 'h':
		k.human = true
	case 'n':
		k.numeric = true
	case 'R':
		k.random = true
	case 'r':
		k.reverse = true
	case 'V':
		k.version = true
	default:
		return false
	}
	return true
}

type sorter struct {
	keys   []sortKey
	tab    int // -1: blank separation
	stable bool
	unique bool
	rev    bool // global -r for the last-resort comparison
	seed   uint64
}

func isBlank(c byte) bool { return c == ' ' || c == '\t' }

func (s *sorter) begfield(line []byte, k *sortKey) int {
	ptr, lim := 0, len(line)
	sword := k.sword
	if s.tab >= 0 {
		for ptr < lim && sword > 0 {
			sword--
			for ptr < lim && int(line[ptr]) != s.tab {
				ptr++
			}
			if ptr < lim {
				ptr++
			}
		}
	} else {
		for ptr < lim && sword > 0 {
			sword--
			for ptr < lim && isBlank(line[ptr]) {
				ptr++
			}
			for ptr < lim && !isBlank(line[ptr]) {
				ptr++
			}
		}
	}
	if k.skipSB {
		for ptr < lim && isBlank(line[ptr]) {
			ptr++
		}
	}
	return min(lim, ptr+k.schar)
}

func (s *sorter) limfield(line []byte, k *sortKey) int {
	ptr, lim := 0, len(line)
	if k.eword < 0 {
		return lim
	}
	eword, echar := k.eword, k.echar
	if echar == 0 {
		eword++
	}
	if s.tab >= 0 {
		for ptr < lim && eword > 0 {
			eword--
			for ptr < lim && int(line[ptr]) != s.tab {
				ptr++
			}
			if ptr < lim && (eword > 0 || echar != 0) {
				ptr++
			}
		}
	} else {
		for ptr < lim && eword > 0 {
			eword--
			for ptr < lim && isBlank(line[ptr]) {
				ptr++
			}
			for ptr < lim && !isBlank(line[ptr]) {
				ptr++
			}
		}
	}
	if echar != 0 {
		if k.skipEB {
			for ptr < lim && isBlank(line[ptr]) {
				ptr++
			}
		}
		ptr = min(lim, ptr+echar)
	}
	return ptr
}

// keySpan returns the key's bytes within line.
func (s *sorter) keySpan(line []byte, k *sortKey) []byte {
	b := s.begfield(line, k)
	e := s.limfield(line, k)
	if e < b {
		e = b
	}
	return line[b:e]
}

// compare orders two lines: keys first, then (unless -s or -u) the
// whole line bytewise.
func (s *sorter) compare(a, b []byte) int {
	if len(s.keys) == 0 {
		c := bytes.Compare(a, b)
		if s.rev {
			return -c
		}
		return c
	}
	for i := range s.keys {
		k := &s.keys[i]
		ka, kb := s.keySpan(a, k), s.keySpan(b, k)
		c := s.compareKey(ka, kb, k)
		if c != 0 {
			if k.reverse {
				return -c
			}
			return c
		}
	}
	if s.stable || s.unique {
		return 0
	}
	c := bytes.Compare(a, b)
	if s.rev {
		return -c
	}
	return c
}

func (s *sorter) compareKey(a, b []byte, k *sortKey) int {
	switch {
	case k.numeric:
		return numCompare(a, b)
	case k.general:
		return generalCompare(a, b)
	case k.human:
		return humanCompare(a, b)
	case k.month:
		return monthOf(a) - monthOf(b)
	case k.version:
		return filevercmp(a, b)
	case k.random:
		ha, hb := s.hash(a), s.hash(b)
		if ha != hb {
			if ha < hb {
				return -1
			}
			return 1
		}
		return bytes.Compare(a, b)
	case k.fold || k.dict || k.nonprint:
		return textCompare(a, b, k)
	}
	return bytes.Compare(a, b)
}

func (s *sorter) hash(b []byte) uint64 {
	h := fnv.New64a()
	var seed [8]byte
	for i := range seed {
		seed[i] = byte(s.seed >> (8 * i))
	}
	h.Write(seed[:])
	h.Write(b)
	return h.Sum64()
}

func textCompare(a, b []byte, k *sortKey) int {
	i, j := 0, 0
	ignore := func(c byte) bool {
		if k.dict && !(isBlank(c) || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
			return true
		}
		return k.nonprint && !(c >= ' ' && c < 0x7f)
	}
	for {
		for i < len(a) && ignore(a[i]) {
			i++
		}
		for j < len(b) && ignore(b[j]) {
			j++
		}
		if i >= len(a) || j >= len(b) {
			switch {
			case i < len(a):
				return 1
			case j < len(b):
				return -1
			}
			return 0
		}
		ca, cb := a[i], b[j]
		if k.fold {
			ca, cb = upper(ca), upper(cb)
		}
		if ca != cb {
			return int(ca) - int(cb)
		}
		i++
		j++
	}
}

// numParts splits a -n number: sign, integer digits without leading
// zeros, fraction digits without trailing zeros.
func numParts(s []byte) (neg bool, intp, frac []byte) {
	i := 0
	for i < len(s) && isBlank(s[i]) {
		i++
	}
	if i < len(s) && s[i] == '-' {
		neg = true
		i++
	}
	st := i
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	intp = s[st:i]
	for len(intp) > 0 && intp[0] == '0' {
		intp = intp[1:]
	}
	if i < len(s) && s[i] == '.' {
		i++
		fs := i
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		frac = s[fs:i]
		for len(frac) > 0 && frac[len(frac)-1] == '0' {
			frac = frac[:len(frac)-1]
		}
	}
	if len(intp) == 0 && len(frac) == 0 {
		neg = false // -0 is 0
	}
	return
}

func numCompare(a, b []byte) int {
	na, ia, fa := numParts(a)
	nb, ib, fb := numParts(b)
	if na != nb {
		if na {
			return -1
		}
		return 1
	}
	c := cmpMagnitude(ia, fa, ib, fb)
	if na {
		return -c
	}
	return c
}

func cmpMagnitude(ia, fa, ib, fb []byte) int {
	if len(ia) != len(ib) {
		if len(ia) < len(ib) {
			return -1
		}
		return 1
	}
	if c := bytes.Compare(ia, ib); c != 0 {
		return c
	}
	return bytes.Compare(fa, fb)
}

// generalCompare implements -g: non-numbers first, then NaN, then
// numbers by value.
func generalCompare(a, b []byte) int {
	va, oka := parseFloatPrefix(a)
	vb, okb := parseFloatPrefix(b)
	switch {
	case !oka && !okb:
		return 0
	case !oka:
		return -1
	case !okb:
		return 1
	}
	nanA, nanB := math.IsNaN(va), math.IsNaN(vb)
	switch {
	case nanA && nanB:
		return 0
	case nanA:
		return -1
	case nanB:
		return 1
	case va < vb:
		return -1
	case va > vb:
		return 1
	}
	return 0
}

// parseFloatPrefix parses the longest prefix of s (after blanks) that is
// a floating-point number, like strtod.
func parseFloatPrefix(s []byte) (float64, bool) {
	i := 0
	for i < len(s) && (isBlank(s[i]) || s[i] == '\n') {
		i++
	}
	s = s[i:]
	// Hexadecimal like strtod: 0x1F, 0x1.8p3.
	if h := hexFloatPrefix(s); h != "" {
		if v, err := strconv.ParseFloat(h, 64); err == nil {
			return v, true
		}
	}
	best := -1
	var val float64
	for j := min(len(s), 64); j > 0; j-- {
		if v, err := strconv.ParseFloat(string(s[:j]), 64); err == nil || errors.Is(err, strconv.ErrRange) {
			best, val = j, v
			break
		}
	}
	if best < 0 {
		return 0, false
	}
	return val, true
}

// hexFloatPrefix returns the hexadecimal number at the start of s in a
// form strconv.ParseFloat accepts (it needs the p exponent), or "".
func hexFloatPrefix(s []byte) string {
	i := 0
	if i < len(s) && (s[i] == '-' || s[i] == '+') {
		i++
	}
	if !(i+2 < len(s) && s[i] == '0' && (s[i+1] == 'x' || s[i+1] == 'X')) {
		return ""
	}
	j := i + 2
	isHex := func(c byte) bool { return isDigit(c) || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F' }
	st := j
	for j < len(s) && isHex(s[j]) {
		j++
	}
	if j < len(s) && s[j] == '.' {
		j++
		for j < len(s) && isHex(s[j]) {
			j++
		}
	}
	if j == st || (j == st+1 && s[st] == '.') {
		return ""
	}
	mant := string(s[:j])
	if j < len(s) && (s[j] == 'p' || s[j] == 'P') {
		k := j + 1
		if k < len(s) && (s[k] == '-' || s[k] == '+') {
			k++
		}
		e := k
		for k < len(s) && isDigit(s[k]) {
			k++
		}
		if k > e {
			return string(s[:k])
		}
	}
	return mant + "p0"
}

func humanCompare(a, b []byte) int {
	sa, sb := humanSuffix(a), humanSuffix(b)
	na, _, _ := numParts(a)
	nb, _, _ := numParts(b)
	// Negative numbers order below positive ones whatever the suffix.
	if na != nb {
		if na {
			return -1
		}
		return 1
	}
	if sa != sb {
		c := sa - sb
		if na {
			c = -c
		}
		return c
	}
	return numCompare(a, b)
}

func humanSuffix(s []byte) int {
	i := 0
	for i < len(s) && isBlank(s[i]) {
		i++
	}
	if i < len(s) && s[i] == '-' {
		i++
	}
	for i < len(s) && (s[i] >= '0' && s[i] <= '9' || s[i] == '.') {
		i++
	}
	if i < len(s) {
		if s[i] == 'k' {
			return 1
		}
		if k := strings.IndexByte("KMGTPEZYRQ", s[i]); k >= 0 {
			return k + 1
		}
	}
	return 0
}

var monthNames = [...]string{"JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"}

func monthOf(s []byte) int {
	i := 0
	for i < len(s) && (isBlank(s[i]) || s[i] == '\n') {
		i++
	}
	if len(s)-i < 3 {
		return 0
	}
	m := string([]byte{upper(s[i]), upper(s[i+1]), upper(s[i+2])})
	for k, n := range monthNames {
		if n == m {
			return k + 1
		}
	}
	return 0
}

// filevercmp is gnulib's version comparison (sort -V, ls -v).
func filevercmp(a, b []byte) int {
	if bytes.Equal(a, b) {
		return 0
	}
	switch {
	case len(a) == 0:
		return -1
	case len(b) == 0:
		return 1
	}
	for _, special := range []string{".", ".."} {
		ea, eb := string(a) == special, string(b) == special
		if ea != eb {
			if ea {
				return -1
			}
			return 1
		}
	}
	ha, hb := a[0] == '.', b[0] == '.'
	if ha != hb {
		if ha {
			return -1
		}
		return 1
	}
	if ha {
		a, b = a[1:], b[1:]
	}
	pa, pb := a[:fileSuffixStart(a)], b[:fileSuffixStart(b)]
	if c := verrevcmp(pa, pb); c != 0 || bytes.Equal(pa, a) && bytes.Equal(pb, b) {
		if c != 0 {
			return c
		}
	}
	if c := verrevcmp(a, b); c != 0 {
		return c
	}
	return bytes.Compare(a, b)
}

// fileSuffixStart finds the start of a trailing (\.[A-Za-z~][A-Za-z0-9~]*)* suffix.
func fileSuffixStart(s []byte) int {
	end := len(s)
	i := len(s)
	for {
		j := i - 1
		for j >= 0 && (isAlnum(s[j]) || s[j] == '~') {
			j--
		}
		if j < 0 || s[j] != '.' || j+1 >= i || !(isAlpha(s[j+1]) || s[j+1] == '~') {
			return end
		}
		end = j
		i = j
	}
}

func isAlpha(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
func isDigit(c byte) bool { return c >= '0' && c <= '9' }
func isAlnum(c byte) bool { return isAlpha(c) || isDigit(c) }

func verOrder(s []byte, i int) int {
	if i >= len(s) {
		return 0
	}
	c := s[i]
	switch {
	case isDigit(c):
		return 0
	case isAlpha(c):
		return int(c)
	case c == '~':
		return -1
	}
	return int(c) + 256
}

func verrevcmp(a, b []byte) int {
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		firstDiff := 0
		for i < len(a) && !isDigit(a[i]) || j < len(b) && !isDigit(b[j]) {
			ac, bc := verOrder(a, i), verOrder(b, j)
			if ac != bc {
				return ac - bc
			}
			i++
			j++
		}
		for i < len(a) && a[i] == '0' {
			i++
		}
		for j < len(b) && b[j] == '0' {
			j++
		}
		for i < len(a) && isDigit(a[i]) && j < len(b) && isDigit(b[j]) {
			if firstDiff == 0 {
				firstDiff = int(a[i]) - int(b[j])
			}
			i++
			j++
		}
		if i < len(a) && isDigit(a[i]) {
			return 1
		}
		if j < len(b) && isDigit(b[j]) {
			return -1
		}
		if firstDiff != 0 {
			return firstDiff
		}
	}
	return 0
}

// parseKeyDef parses a -k argument.
func parseKeyDef(spec string) (sortKey, error) {
	k := sortKey{eword: -1}
	bad := func(why string) error {
		return fmt.Errorf("%s: invalid field specification %s", why, quote(spec))
	}
	s := spec
	num := func() (int, bool) {
		i := 0
		for i < len(s) && isDigit(s[i]) {
			i++
		}
		if i == 0 {
			return 0, false
		}
		n, err := strconv.Atoi(s[:i])
		if err != nil {
			n = math.MaxInt32
		}
		s = s[i:]
		return n, true
	}
	f, ok := num()
	if !ok {
		return k, fmt.Errorf("invalid number at field start: invalid count at start of %s", quote(spec))
	}
	if f == 0 {
		return k, bad("field number is zero")
	}
	k.sword = f - 1
	if strings.HasPrefix(s, ".") {
		s = s[1:]
		c, ok := num()
		if !ok {
			return k, fmt.Errorf("invalid number after '.': invalid count at start of %s", quote(s))
		}
		if c == 0 {
			return k, bad("character offset is zero")
		}
		k.schar = c - 1
	}
	for len(s) > 0 && s[0] != ',' {
		if !k.setOpt(s[0], true) {
			return k, fmt.Errorf("stray character in field spec: invalid field specification %s", quote(spec))
		}
		s = s[1:]
	}
	if strings.HasPrefix(s, ",") {
		s = s[1:]
		f, ok := num()
		if !ok {
			return k, fmt.Errorf("invalid number after ',': invalid count at start of %s", quote(s))
		}
		if f == 0 {
			return k, bad("field number is zero")
		}
		k.eword = f - 1
		if strings.HasPrefix(s, ".") {
			s = s[1:]
			c, ok := num()
			if !ok {
				return k, fmt.Errorf("invalid number after '.': invalid count at start of %s", quote(s))
			}
			k.echar = c
		}
		for len(s) > 0 {
			if !k.setOpt(s[0], false) {
				return k, fmt.Errorf("stray character in field spec: invalid field specification %s", quote(spec))
			}
			s = s[1:]
		}
	}
	return k, nil
}

func sortMain(e *cmd.Env) int {
	t := newTool(e)
	opts, files, st, ok := t.parse(sortOpts, "sort [OPTION]... [FILE]...", sortHelp, 2)
	if !ok {
		return st
	}
	s := &sorter{tab: -1, seed: 0x9e3779b97f4a7c15}
	var global sortKey
	var keys []sortKey
	check, quiet, merge := false, false, false
	output := ""
	delim := byte('\n')
	for _, o := range opts {
		switch o.name {
		case "ignore-leading-blanks":
			global.skipSB, global.skipEB = true, true
		case "dictionary-order", "ignore-case", "general-numeric-sort", "ignore-nonprinting",
			"month-sort", "human-numeric-sort", "numeric-sort", "random-sort", "reverse", "version-sort":
			letter := map[string]byte{"dictionary-order": 'd', "ignore-case": 'f', "general-numeric-sort": 'g',
				"ignore-nonprinting": 'i', "month-sort": 'M', "human-numeric-sort": 'h', "numeric-sort": 'n',
				"random-sort": 'R', "reverse": 'r', "version-sort": 'V'}[o.name]
			global.setOpt(letter, true)
		case "sort":
			m := map[string]byte{"general-numeric": 'g', "human-numeric": 'h', "month": 'M', "numeric": 'n', "random": 'R', "version": 'V'}
			l, ok := m[o.val]
			if !ok {
				e.Errorf("invalid argument %s for '--sort'", quote(o.val))
				return 2
			}
			global.setOpt(l, true)
		case "check":
			check = true
			if o.val == "quiet" || o.val == "silent" {
				quiet = true
			}
		case "C":
			check, quiet = true, true
		case "merge":
			merge = true
		case "key":
			k, err := parseKeyDef(o.val)
			if err != nil {
				e.Errorf("%s", err)
				return 2
			}
			keys = append(keys, k)
		case "output":
			output = o.val
		case "stable":
			s.stable = true
		case "field-separator":
			v := unescapeTab(o.val)
			if len(v) != 1 {
				if v == "" {
					e.Errorf("empty tab")
				} else {
					e.Errorf("multi-character tab %s", quote(o.val))
				}
				return 2
			}
			s.tab = int(v[0])
		case "unique":
			s.unique = true
		case "zero-terminated":
			delim = 0
		case "random-source":
			s.seed = fnv64(o.val)
		case "files0-from":
			data, err := readAllInput(e, o.val)
			if err != nil {
				e.Errorf("cannot open %s for reading: %s", quote(o.val), strerror(err))
				return 2
			}
			for _, f := range strings.Split(string(data), "\x00") {
				if f != "" {
					files = append(files, f)
				}
			}
		}
	}
	for i := range keys {
		if !keys[i].hasOpts() {
			g := global
			g.sword, g.schar, g.eword, g.echar = keys[i].sword, keys[i].schar, keys[i].eword, keys[i].echar
			keys[i] = g
		}
	}
	if len(keys) == 0 {
		g := global
		g.eword = -1
		if g.hasOpts() {
			keys = []sortKey{g}
		}
	}
	s.keys = keys
	s.rev = global.reverse
	files = inputs(files)
	var all []byte
	status := 0
	var recs [][]byte
	var recFile []string
	var runs [][][]byte // -m: the already sorted inputs
	for _, name := range files {
		data, err := readAllInput(e, name)
		if err != nil {
			e.Errorf("cannot read: %s: %s", name, strerror(err))
			return 2
		}
		if check {
			for _, r := range splitRecords(data, delim) {
				recs = append(recs, r)
				recFile = append(recFile, name)
			}
			continue
		}
		if merge {
			runs = append(runs, splitRecords(data, delim))
			continue
		}
		if all == nil {
			all = data // one input: no copy
		} else {
			all = append(all, data...)
		}
		if len(all) > 0 && all[len(all)-1] != delim {
			all = append(all, delim)
		}
	}
	if check {
		for i := 1; i < len(recs); i++ {
			c := s.compare(recs[i-1], recs[i])
			if c > 0 || (s.unique && c == 0) {
				if !quiet {
					lineno := 1
					for j := i - 1; j >= 0 && recFile[j] == recFile[i]; j-- {
						lineno++
					}
					fmt.Fprintf(e.Stderr, "sort: %s:%d: disorder: %s\n", recFile[i], lineno, recs[i])
				}
				return 1
			}
		}
		return 0
	}
	var each func(yield func([]byte) bool)
	switch {
	case merge:
		recs = s.mergeRuns(runs)
		each = s.uniqueLines(recs)
	case uint64(len(all)) < indexedLimit:
		each = s.sortIndexed(all, delim)
	default:
		recs = splitRecords(all, delim)
		s.sortRecords(recs)
		each = s.uniqueLines(recs)
	}
	w := t.out
	var f *os.File
	if output != "" && output != "-" {
		var err error
		f, err = os.Create(output)
		if err != nil {
			e.Errorf("open failed: %s: %s", output, strerror(err))
			return 2
		}
		w.Reset(f)
	}
	for r := range each {
		w.Write(r)
		w.WriteByte(delim)
	}
	if f != nil {
		if err := w.Flush(); err != nil {
			e.Errorf("write failed: %s: %s", output, strerror(err))
			status = 2
		}
		if err := f.Close(); err != nil && status == 0 {
			e.Errorf("write failed: %s: %s", output, strerror(err))
			status = 2
		}
		return status
	}
	return t.flush(status)
}

// indexedLimit is the input size from which sort keeps records as
// slices (sortRecords) instead of 32-bit offsets (sortIndexed); a
// variable so that tests can compare the two.
var indexedLimit uint64 = 1<<32 - 1

// uniqueLines yields recs, without the repeats -u drops.
func (s *sorter) uniqueLines(recs [][]byte) func(yield func([]byte) bool) {
	return func(yield func([]byte) bool) {
		var prev []byte
		for i, r := range recs {
			if s.unique && i > 0 && s.compare(prev, r) == 0 {
				continue
			}
			prev = r
			if !yield(r) {
				return
			}
		}
	}
}

// sortIndexed sorts the records of data (each ending in delim; len(data)
// < 4 GiB) and yields them in order, without the repeats -u
// drops. It is sortRecords in a compact form: a record is its offset in
// data (4 bytes, not a 24-byte slice), the order is a permutation of
// record numbers (4 bytes), a key is a pair of offsets (8 bytes) and a
// parsed -n key four (17 bytes), so that sorting N bytes of short lines
// takes a few N of memory, not twenty.
func (s *sorter) sortIndexed(data []byte, delim byte) func(yield func([]byte) bool) {
	n := bytes.Count(data, []byte{delim})
	if len(s.keys) == 0 {
		return s.sortSpans(data, delim, n)
	}
	offs := make([]uint32, 0, n+1)
	offs = append(offs, 0)
	for i, c := range data {
		if c == delim {
			offs = append(offs, uint32(i+1))
		}
	}
	n = len(offs) - 1
	line := func(i uint32) []byte { return data[offs[i] : offs[i+1]-1] }
	// off is where sub, a subslice of data, starts in it.
	off := func(sub []byte) uint32 { return uint32(cap(data) - cap(sub)) }

	nk := len(s.keys)
	slot := make([]int, nk) // index among the numeric or the other keys
	nNum, nSpan := 0, 0
	for k := range s.keys {
		if s.keys[k].numeric {
			slot[k], nNum = nNum, nNum+1
		} else {
			slot[k], nSpan = nSpan, nSpan+1
		}
	}
	spans := make([]uint32, n*nSpan*2)
	type cnum struct {
		is, ie, fs, fe uint32
		neg            bool
	}
	nums := make([]cnum, n*nNum)
	for i := 0; i < n && nk > 0; i++ {
		l := line(uint32(i))
		for k := range s.keys {
			ks := s.keySpan(l, &s.keys[k])
			if s.keys[k].numeric {
				neg, intp, frac := numParts(ks)
				nums[i*nNum+slot[k]] = cnum{off(intp), off(intp) + uint32(len(intp)), off(frac), off(frac) + uint32(len(frac)), neg}
			} else {
				j := (i*nSpan + slot[k]) * 2
				spans[j], spans[j+1] = off(ks), off(ks)+uint32(len(ks))
			}
		}
	}
	cmp := func(a, b uint32) int {
		for k := range s.keys {
			key := &s.keys[k]
			var c int
			if key.numeric {
				x, y := &nums[int(a)*nNum+slot[k]], &nums[int(b)*nNum+slot[k]]
				c = cmpNumKey(&numKey{neg: x.neg, intp: data[x.is:x.ie], frac: data[x.fs:x.fe]},
					&numKey{neg: y.neg, intp: data[y.is:y.ie], frac: data[y.fs:y.fe]})
			} else {
				ja, jb := (int(a)*nSpan+slot[k])*2, (int(b)*nSpan+slot[k])*2
				c = s.compareKey(data[spans[ja]:spans[ja+1]], data[spans[jb]:spans[jb+1]], key)
			}
			if c != 0 {
				if key.reverse {
					return -c
				}
				return c
			}
		}
		if nk > 0 && (s.stable || s.unique) {
			return 0
		}
		c := bytes.Compare(line(a), line(b))
		if s.rev {
			return -c
		}
		return c
	}
	// The first key's prefix, for -n keys (see sortByPrefix).
	var prefix func(i uint32) uint32
	if k0 := &s.keys[0]; k0.numeric {
		prefix = func(i uint32) uint32 {
			x := &nums[int(i)*nNum+slot[0]]
			return numPrefix(x.neg, data[x.is:x.ie], data[x.fs:x.fe])
		}
		if k0.reverse {
			prefix = func(i uint32) uint32 {
				x := &nums[int(i)*nNum+slot[0]]
				return ^numPrefix(x.neg, data[x.is:x.ie], data[x.fs:x.fe])
			}
		}
	}
	order := sortByPrefix(n, prefix, cmp)
	return func(yield func([]byte) bool) {
		for i, r := range order {
			if s.unique && i > 0 && cmp(uint32(order[i-1]), uint32(r)) == 0 {
				continue
			}
			if !yield(line(uint32(r))) {
				return
			}
		}
	}
}

// sortByPrefix returns the record numbers 0..n-1 (in the low 32 bits of
// each element) in the order of cmp, ties in input order (stable).
// prefix(i), when not nil, orders record i coarsely: prefix(a) <
// prefix(b) must imply cmp(a, b) < 0. Each record is then packed as
// prefix<<32 | number and the packed integers are sorted as such, with no
// call of cmp; only runs of equal prefixes are sorted with cmp.
// Comparison-function calls dominate a sort of a million short keys, and
// Go's wasm code makes calls several times dearer than native code does:
// this takes sort -n -k1,1 of a million lines from about 12 s to about
// 4 s in wasm (from 1.8 s to 0.7 s natively).
func sortByPrefix(n int, prefix func(i uint32) uint32, cmp func(a, b uint32) int) []uint64 {
	order := make([]uint64, n)
	byNumber := func(a, b uint64) int {
		if c := cmp(uint32(a), uint32(b)); c != 0 {
			return c
		}
		return int(uint32(a)) - int(uint32(b))
	}
	if prefix == nil {
		for i := range order {
			order[i] = uint64(i)
		}
		slices.SortFunc(order, byNumber)
		return order
	}
	for i := range order {
		order[i] = uint64(prefix(uint32(i)))<<32 | uint64(i)
	}
	slices.Sort(order)
	for i := 0; i < n; {
		j := i + 1
		for j < n && order[j]>>32 == order[i]>>32 {
			j++
		}
		if j-i > 1 {
			slices.SortFunc(order[i:j], byNumber)
		}
		i = j
	}
	for i := range order {
		order[i] &= 1<<32 - 1
	}
	return order
}

// numPrefix is an order-preserving 32-bit prefix of a -n number (see
// numParts): the sign bit (set for non-negative numbers), 7 bits of the
// number of integer digits and 24 of the first 7 digits of the integer
// and fraction parts; a number of more than 126 integer digits takes the
// largest prefix of its sign. Negative numbers take the complement.
func numPrefix(neg bool, intp, frac []byte) uint32 {
	var p uint32
	if len(intp) > 126 {
		p = 127<<24 | 0xffffff
	} else {
		d := uint32(0)
		for i := range 7 {
			d *= 10
			switch {
			case i < len(intp):
				d += uint32(intp[i] - '0')
			case i-len(intp) < len(frac):
				d += uint32(frac[i-len(intp)] - '0')
			}
		}
		p = uint32(len(intp))<<24 | d
	}
	if neg {
		return ^p &^ (1 << 31)
	}
	return 1<<31 | p
}

// sortSpans is sortIndexed without keys: each of the n records is its
// start and end offsets packed in a uint64 (8 bytes), sorted directly,
// with no indirection through a table of offsets.
func (s *sorter) sortSpans(data []byte, delim byte, n int) func(yield func([]byte) bool) {
	spans := make([]uint64, 0, n)
	start := 0
	for i, c := range data {
		if c == delim {
			spans = append(spans, uint64(start)<<32|uint64(i))
			start = i + 1
		}
	}
	line := func(sp uint64) []byte { return data[sp>>32 : uint32(sp)] }
	cmp := func(a, b uint64) int { return bytes.Compare(data[a>>32:uint32(a)], data[b>>32:uint32(b)]) }
	if s.rev {
		cmp = func(a, b uint64) int { return bytes.Compare(data[b>>32:uint32(b)], data[a>>32:uint32(a)]) }
	}
	// Equal records are equal bytes: stability cannot show.
	slices.SortFunc(spans, cmp)
	return func(yield func([]byte) bool) {
		for i, sp := range spans {
			if s.unique && i > 0 && cmp(spans[i-1], sp) == 0 {
				continue
			}
			if !yield(line(sp)) {
				return
			}
		}
	}
}

// mergeRuns merges sorted inputs (sort -m): it repeatedly takes the
// smallest head, the earliest input winning ties, as GNU does; inputs that
// are not sorted are not repaired.
func (s *sorter) mergeRuns(runs [][][]byte) [][]byte {
	var out [][]byte
	pos := make([]int, len(runs))
	for {
		best := -1
		for i, r := range runs {
			if pos[i] >= len(r) {
				continue
			}
			if best < 0 || s.compare(r[pos[i]], runs[best][pos[best]]) < 0 {
				best = i
			}
		}
		if best < 0 {
			return out
		}
		out = append(out, runs[best][pos[best]])
		pos[best]++
	}
}

// sortRec is a line with its keys extracted once, so that the n log n
// comparisons do not split fields again.
type sortRec struct {
	line []byte
	keys [][]byte
	nums []numKey // parsed -n keys, parallel to keys
}

// numKey is a parsed -n number (see numParts).
type numKey struct {
	neg        bool
	intp, frac []byte
}

func cmpNumKey(a, b *numKey) int {
	if a.neg != b.neg {
		if a.neg {
			return -1
		}
		return 1
	}
	c := cmpMagnitude(a.intp, a.frac, b.intp, b.frac)
	if a.neg {
		return -c
	}
	return c
}

// sortRecords sorts lines in place: keys are extracted once per line,
// and the sort is stable only when -s or -u asks for it (otherwise the
// last-resort comparison makes the order total anyway).
func (s *sorter) sortRecords(lines [][]byte) {
	if len(s.keys) == 0 {
		cmp := bytes.Compare
		if s.rev {
			cmp = func(a, b []byte) int { return bytes.Compare(b, a) }
		}
		if s.stable || s.unique {
			slices.SortStableFunc(lines, cmp)
		} else {
			slices.SortFunc(lines, cmp)
		}
		return
	}
	recs := make([]sortRec, len(lines))
	nk := len(s.keys)
	spans := make([][]byte, len(lines)*nk)
	anyNum := false
	for k := range s.keys {
		anyNum = anyNum || s.keys[k].numeric
	}
	var nums []numKey
	if anyNum {
		nums = make([]numKey, len(lines)*nk)
	}
	for i, l := range lines {
		ks := spans[i*nk : (i+1)*nk : (i+1)*nk]
		for k := range s.keys {
			ks[k] = s.keySpan(l, &s.keys[k])
		}
		recs[i] = sortRec{line: l, keys: ks}
		if anyNum {
			ns := nums[i*nk : (i+1)*nk : (i+1)*nk]
			for k := range s.keys {
				if s.keys[k].numeric {
					n := &ns[k]
					n.neg, n.intp, n.frac = numParts(ks[k])
				}
			}
			recs[i].nums = ns
		}
	}
	cmp := func(a, b sortRec) int {
		for k := range s.keys {
			key := &s.keys[k]
			var c int
			if key.numeric {
				c = cmpNumKey(&a.nums[k], &b.nums[k])
			} else {
				c = s.compareKey(a.keys[k], b.keys[k], key)
			}
			if c != 0 {
				if key.reverse {
					return -c
				}
				return c
			}
		}
		if s.stable || s.unique {
			return 0
		}
		c := bytes.Compare(a.line, b.line)
		if s.rev {
			return -c
		}
		return c
	}
	if s.stable || s.unique {
		slices.SortStableFunc(recs, cmp)
	} else {
		slices.SortFunc(recs, cmp)
	}
	for i := range recs {
		lines[i] = recs[i].line
	}
}

func unescapeTab(s string) string {
	if s == `\0` {
		return "\x00"
	}
	return s
}

func fnv64(s string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(s))
	return h.Sum64()
}
