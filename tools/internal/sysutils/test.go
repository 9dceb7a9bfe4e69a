package sysutils

import (
	"fmt"
	"io/fs"
	"os"
	"runtime"
	"strings"

	"github.com/wasmbox/wasmbox/tools/internal/cmd"
)

func init() {
	cmd.Register("test", testMain, "[")
}

// testError is a syntax error of a test expression (exit status 2).
type testError string

func (e testError) Error() string { return string(e) }

func testMain(e *cmd.Env) int {
	args := e.Args[1:]
	if e.Name() == "[" {
		if len(args) == 1 && (args[0] == "--help" || args[0] == "--version") {
			opts, _, _ := cmd.Getopt(args, helpOpts, false)
			helpOrVersion(e, opts, "EXPRESSION ]\nEvaluate a conditional expression (see test).\n")
			return 0
		}
		if len(args) == 0 || args[len(args)-1] != "]" {
			e.Errorf("missing ']'")
			return 2
		}
		args = args[:len(args)-1]
	}
	t := &tester{args: args}
	ok, err := t.eval()
	if err != nil {
		e.Errorf("%s", err.Error())
		return 2
	}
	if ok {
		return 0
	}
	return 1
}

// tester evaluates a test expression with the POSIX rules for up to four
// arguments and a recursive-descent parser (! -a -o parentheses) beyond.
type tester struct {
	args []string
	pos  int
}

func (t *tester) eval() (bool, error) {
	v, err := t.posix(len(t.args))
	if err == nil && t.pos < len(t.args) {
		err = testError(fmt.Sprintf("extra argument '%s'", t.args[t.pos]))
	}
	return v, err
}

// posix evaluates the next n arguments with the POSIX rules for n <= 4,
// and as a full expression beyond.
func (t *tester) posix(n int) (bool, error) {
	a := t.args[t.pos : t.pos+n]
	switch n {
	case 0:
		return false, nil
	case 1:
		t.pos++
		return a[0] != "", nil
	case 2:
		switch {
		case a[0] == "!":
			t.pos += 2
			return a[1] == "", nil
		case isUnary(a[0]):
			t.pos += 2
			return unaryTest(a[0], a[1])
		case len(a[0]) == 2 && a[0][0] == '-':
			return false, testError(fmt.Sprintf("'%s': unary operator expected", a[0]))
		}
		return false, t.beyond()
	case 3:
		switch {
		case isBinary(a[1]):
			t.pos += 3
			return binaryTest(a[0], a[1], a[2])
		case a[0] == "!":
			t.pos++
			v, err := t.posix(2)
			return !v, err
		case a[0] == "(" && a[2] == ")":
			t.pos += 3
			return a[1] != "", nil
		case a[1] == "-a" || a[1] == "-o":
			return t.or()
		}
		return false, testError(fmt.Sprintf("'%s': binary operator expected", a[1]))
	case 4:
		switch {
		case a[0] == "!":
			t.pos++
			v, err := t.posix(3)
			return !v, err
		case a[0] == "(" && a[3] == ")":
			t.pos++
			v, err := t.posix(2)
			t.pos++
			return v, err
		}
	}
	return t.or()
}

// beyond is the error of an expression that ends too early.
func (t *tester) beyond() error {
	return testError(fmt.Sprintf("missing argument after '%s'", t.args[len(t.args)-1]))
}

func (t *tester) peek() (string, bool) {
	if t.pos < len(t.args) {
		return t.args[t.pos], true
	}
	return "", false
}

func (t *tester) or() (bool, error) {
	v, err := t.and()
	for err == nil {
		if s, ok := t.peek(); !ok || s != "-o" {
			break
		}
		t.pos++
		var w bool
		w, err = t.and()
		v = v || w
	}
	return v, err
}

func (t *tester) and() (bool, error) {
	v, err := t.not()
	for err == nil {
		if s, ok := t.peek(); !ok || s != "-a" {
			break
		}
		t.pos++
		var w bool
		w, err = t.not()
		v = v && w
	}
	return v, err
}

func (t *tester) not() (bool, error) {
	if s, ok := t.peek(); ok && s == "!" {
		t.pos++
		v, err := t.not()
		return !v, err
	}
	return t.primary()
}

func (t *tester) primary() (bool, error) {
	s, ok := t.peek()
	if !ok {
		return false, t.beyond()
	}
	rest := len(t.args) - t.pos
	if s == "(" {
		t.pos++
		n := 1
		for ; t.pos+n < len(t.args) && t.args[t.pos+n] != ")"; n++ {
			if n == 4 {
				n = len(t.args) - t.pos
				break
			}
		}
		n = min(n, len(t.args)-t.pos)
		v, err := t.posix(n)
		if err != nil {
			return false, err
		}
		c, ok := t.peek()
		switch {
		case !ok:
			return false, testError("')' expected")
		case c != ")":
			return false, testError(fmt.Sprintf("')' expected, found '%s'", c))
		}
		t.pos++
		return v, nil
	}
	if rest >= 3 && isBinary(t.args[t.pos+1]) {
		l, op, r := t.args[t.pos], t.args[t.pos+1], t.args[t.pos+2]
		t.pos += 3
		return binaryTest(l, op, r)
	}
	if isUnary(s) && rest >= 2 {
		t.pos += 2
		return unaryTest(s, t.args[t.pos-1])
	}
	if isUnary(s) && rest == 1 {
		return false, t.beyond()
	}
	t.pos++
	return s != "", nil
}

func isUnary(op string) bool {
	return len(op) == 2 && op[0] == '-' && strings.IndexByte("bcdefgGhkLnNOprsStuwxz", op[1]) >= 0
}

func isBinary(op string) bool {
	switch op {
	case "=", "==", "!=", "-eq", "-ne", "-lt", "-le", "-gt", "-ge", "-nt", "-ot", "-ef":
		return true
	}
	return false
}

func unaryTest(op, arg string) (bool, error) {
	switch op {
	case "-n":
		return arg != "", nil
	case "-z":
		return arg == "", nil
	case "-t":
		if _, _, err := testInt(arg); err != nil {
			return false, err
		}
		return false, nil // the sandbox has no terminals
	}
	var st fs.FileInfo
	var err error
	// cmd.Stat: the real mode bits and owner, which WASI cannot express.
	if op == "-h" || op == "-L" {
		st, err = cmd.Lstat(arg)
	} else {
		st, err = cmd.Stat(arg)
	}
	if err != nil {
		return false, nil
	}
	m := st.Mode()
	switch op {
	case "-e":
		return true, nil
	case "-f":
		return m.IsRegular(), nil
	case "-d":
		return m.IsDir(), nil
	case "-h", "-L":
		return m&fs.ModeSymlink != 0, nil
	case "-s":
		return st.Size() > 0, nil
	case "-b":
		return m&fs.ModeDevice != 0 && m&fs.ModeCharDevice == 0, nil
	case "-c":
		return m&fs.ModeCharDevice != 0, nil
	case "-p":
		return m&fs.ModeNamedPipe != 0, nil
	case "-S":
		return m&fs.ModeSocket != 0, nil
	case "-g":
		return m&fs.ModeSetgid != 0, nil
	case "-u":
		return m&fs.ModeSetuid != 0, nil
	case "-k":
		return m&fs.ModeSticky != 0, nil
	case "-O", "-G":
		uid, gid := cmd.Owner(st)
		if op == "-O" {
			return uid == sandboxUID || uid < 0, nil
		}
		return gid == sandboxGID || gid < 0, nil
	case "-N":
		return false, nil
	case "-r":
		return canAccess(st, 4), nil
	case "-w":
		return canAccess(st, 2), nil
	case "-x":
		return canAccess(st, 1), nil
	}
	return false, nil
}

// canAccess is access(2) for the sandbox user (uid 1000, gid 1000; natively the process's) on the
// file of st (from cmd.Stat, so with the real bits and owner): the owner's
// permission bits if the user owns the file, the group's if the file is in
// the user's group, the others' otherwise. want combines 4 (read), 2
// (write) and 1 (execute). A root-owned 0644 /etc/passwd is readable but
// not writable.
func canAccess(st fs.FileInfo, want uint32) bool {
	m := uint32(st.Mode().Perm())
	uid, gid := cmd.Owner(st)
	self, group := sandboxUID, sandboxGID
	if runtime.GOOS != "wasip1" {
		// Native in-process runs: the real process's identity.
		self, group = os.Getuid(), os.Getgid()
		if self == 0 {
			return want&1 == 0 || st.IsDir() || m&0o111 != 0
		}
	}
	var bits uint32
	switch {
	case uid < 0 || uid == self:
		bits = m >> 6 & 7
	case gid == group:
		bits = m >> 3 & 7
	default:
		bits = m & 7
	}
	return bits&want == want
}

// testInt checks an integer operand (blanks around it and a sign allowed)
// and returns it normalized: sign ("-" or "") and digits without leading
// zeros. Integers of any size compare correctly.
func testInt(s string) (neg bool, digits string, err error) {
	t := strings.Trim(s, " \t\n\v\f\r")
	if t != "" && (t[0] == '-' || t[0] == '+') {
		neg, t = t[0] == '-', t[1:]
	}
	if t == "" || strings.Trim(t, "0123456789") != "" {
		return false, "", testError(fmt.Sprintf("invalid integer '%s'", s))
	}
	t = strings.TrimLeft(t, "0")
	return neg && t != "", t, nil
}

// compareInts compares two integer operands.
func compareInts(l, r string) (int, error) {
	ln, ld, err := testInt(l)
	if err != nil {
		return 0, err
	}
	rn, rd, err := testInt(r)
	if err != nil {
		return 0, err
	}
	if ln != rn {
		if ln {
			return -1, nil
		}
		return 1, nil
	}
	c := len(ld) - len(rd)
	if c == 0 {
		c = strings.Compare(ld, rd)
	}
	if ln {
		c = -c
	}
	return c, nil
}

func binaryTest(l, op, r string) (bool, error) {
	switch op {
	case "=", "==":
		return l == r, nil
	case "!=":
		return l != r, nil
	case "-nt", "-ot":
		a, errA := os.Stat(l)
		b, errB := os.Stat(r)
		switch {
		case errA != nil && errB != nil:
			return false, nil
		case errA != nil:
			return op == "-ot", nil
		case errB != nil:
			return op == "-nt", nil
		}
		if op == "-nt" {
			return a.ModTime().After(b.ModTime()), nil
		}
		return a.ModTime().Before(b.ModTime()), nil
	case "-ef":
		a, errA := os.Stat(l)
		b, errB := os.Stat(r)
		return errA == nil && errB == nil && os.SameFile(a, b), nil
	}
	c, err := compareInts(l, r)
	if err != nil {
		return false, err
	}
	switch op {
	case "-eq":
		return c == 0, nil
	case "-ne":
		return c != 0, nil
	case "-lt":
		return c < 0, nil
	case "-le":
		return c <= 0, nil
	case "-gt":
		return c > 0, nil
	}
	return c >= 0, nil
}
