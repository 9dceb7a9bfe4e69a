package morecmds

import (
	"bufio"
	"errors"
	"io"
	"strconv"
	"strings"

	"github.com/wasmbox/wasmbox/tools/internal/cmd"
)

func init() {
	cmd.Register("expand", expandMain)
	cmd.Register("unexpand", unexpandMain)
}

// tabStops is a parsed --tabs list, as coreutils' expand-common.c keeps it.
type tabStops struct {
	size      int // a single value: every size columns
	list      []int
	extend    int // "/N" last: multiples of N after the list
	increment int // "+N" last: every N after the last stop
}

func (t *tabStops) parse(s string) error {
	fields := strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' })
	for i, f := range fields {
		kind := byte(0)
		if f != "" && (f[0] == '/' || f[0] == '+') {
			kind, f = f[0], f[1:]
			if i != len(fields)-1 {
				return errors.New("'" + string(kind) + "' specifier only allowed with the last value")
			}
		}
		for _, c := range f {
			if c < '0' || c > '9' {
				return errors.New("tab size contains invalid character(s): " + quote(f[strings.IndexRune(f, c):]))
			}
		}
		n, err := strconv.Atoi(f)
		if err != nil && f != "" {
			return errors.New("tab stop is too large " + quote(f))
		}
		switch kind {
		case '/':
			t.extend = n
		case '+':
			t.increment = n
		default:
			if n == 0 {
				return errors.New("tab size cannot be 0")
			}
			if len(t.list) > 0 && n <= t.list[len(t.list)-1] {
				return errors.New("tab sizes must be ascending")
			}
			t.list = append(t.list, n)
		}
	}
	return nil
}

// finish applies the defaults once all --tabs options are parsed.
func (t *tabStops) finish() error {
	switch {
	case len(t.list) == 0 && t.extend == 0 && t.increment == 0:
		t.size = 8
	case len(t.list) == 1 && t.extend == 0 && t.increment == 0:
		t.size, t.list = t.list[0], nil
	case len(t.list) == 0 && t.extend != 0:
		t.size, t.extend = t.extend, 0
	case len(t.list) == 0 && t.increment != 0:
		t.size, t.increment = t.increment, 0
	}
	if t.size == 0 && t.extend == 0 && t.increment == 0 && len(t.list) == 0 {
		return errors.New("tab size cannot be 0")
	}
	return nil
}

// next returns the column of the next tab stop after column, advancing
// *idx through the list; last is true past the final stop.
func (t *tabStops) next(column int, idx *int) (int, bool) {
	if t.size != 0 {
		return column + t.size - column%t.size, false
	}
	for ; *idx < len(t.list); *idx++ {
		if column < t.list[*idx] {
			return t.list[*idx], false
		}
	}
	if t.extend != 0 {
		return column + t.extend - column%t.extend, false
	}
	if t.increment != 0 {
		end := t.list[len(t.list)-1]
		return column + t.increment - (column-end)%t.increment, false
	}
	return 0, true
}

// obsoleteTabs turns the obsolete "-N[,N]..." options of expand and
// unexpand into -t options.
func obsoleteTabs(args []string) []string {
	out := []string{args[0]}
	for i := 1; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			return append(out, args[i:]...)
		}
		if len(a) > 1 && a[0] == '-' && a[1] >= '0' && a[1] <= '9' {
			out = append(out, "--obsolete-tabs="+a[1:])
			continue
		}
		out = append(out, a)
	}
	return out
}

func tabsCommon(e *cmd.Env, spec []cmd.Option, usage string) (opts []cmd.Opt, files []string, tabs *tabStops, status int, ok bool) {
	e = &cmd.Env{Args: obsoleteTabs(e.Args), Stdin: e.Stdin, Stdout: e.Stdout, Stderr: e.Stderr}
	spec = append(spec, cmd.Option{Long: "obsolete-tabs", Arg: cmd.RequiredArg})
	opts, files, status, ok = parse(e, spec, usage, 1)
	if !ok {
		return nil, nil, nil, status, false
	}
	tabs = &tabStops{}
	for _, o := range opts {
		if o.Name == "tabs" || o.Name == "obsolete-tabs" {
			if err := tabs.parse(o.Value); err != nil {
				e.Errorf("%s", err)
				return nil, nil, nil, 1, false
			}
		}
	}
	if err := tabs.finish(); err != nil {
		e.Errorf("%s", err)
		return nil, nil, nil, 1, false
	}
	return opts, inputs(files), tabs, 0, true
}

// eachLine feeds fn the lines of every input (newline kept), reporting
// unreadable inputs; it returns the exit status.
func eachLine(e *cmd.Env, files []string, out *bufio.Writer, fn func(line []byte)) int {
	status := 0
	for _, name := range files {
		r, closeFn, err := openIn(e, name)
		if err != nil {
			e.Errorf("%s: %s", name, strerror(err))
			status = 1
			continue
		}
		br := bufio.NewReaderSize(r, 64<<10)
		for {
			line, err := br.ReadSlice('\n')
			if err == bufio.ErrBufferFull {
				buf := append([]byte(nil), line...)
				for err == bufio.ErrBufferFull {
					line, err = br.ReadSlice('\n')
					buf = append(buf, line...)
				}
				line = buf
			}
			if len(line) > 0 {
				fn(line)
			}
			if err != nil {
				if err != io.EOF {
					e.Errorf("%s: %s", name, strerror(err))
					status = 1
				}
				break
			}
		}
		closeFn()
	}
	return flush(e, out, status)
}

func expandMain(e *cmd.Env) int {
	spec := []cmd.Option{{Short: 'i', Long: "initial"}, {Short: 't', Long: "tabs", Arg: cmd.RequiredArg}}
	opts, files, tabs, status, ok := tabsCommon(e, spec, "expand [OPTION]... [FILE]...")
	if !ok {
		return status
	}
	initial := false
	for _, o := range opts {
		if o.Name == "initial" {
			initial = true
		}
	}
	out := bufio.NewWriter(e.Stdout)
	return eachLine(e, files, out, func(line []byte) {
		column, idx := 0, 0
		convert := true
		for i, c := range line {
			if !convert {
				out.Write(line[i:])
				return
			}
			switch c {
			case '\t':
				next, last := tabs.next(column, &idx)
				if last {
					next = column + 1
				}
				for column++; column < next; column++ {
					out.WriteByte(' ')
				}
				c = ' '
			case '\b':
				if column > 0 {
					column--
				}
				if idx > 0 {
					idx--
				}
			default:
				column++
			}
			convert = !initial || c == ' ' || c == '\t'
			out.WriteByte(c)
		}
	})
}

func unexpandMain(e *cmd.Env) int {
	spec := []cmd.Option{{Short: 'a', Long: "all"}, {Long: "first-only"}, {Short: 't', Long: "tabs", Arg: cmd.RequiredArg}}
	opts, files, tabs, status, ok := tabsCommon(e, spec, "unexpand [OPTION]... [FILE]...")
	if !ok {
		return status
	}
	all, firstOnly := false, false
	for _, o := range opts {
		switch o.Name {
		case "all":
			all = true
		case "first-only":
			firstOnly = true
		case "tabs":
			all = true
		}
	}
	if firstOnly {
		all = false
	}
	out := bufio.NewWriter(e.Stdout)
	pending := make([]byte, 0, 64)
	return eachLine(e, files, out, func(line []byte) {
		column, idx, next := 0, 0, 0
		convert, prevBlank, oneBlank := true, true, false
		pending = pending[:0]
		// c < 0 stands for the end of the line without a newline.
		for i := 0; i <= len(line); i++ {
			c := -1
			if i < len(line) {
				c = int(line[i])
			}
			if convert {
				blank := c == ' ' || c == '\t'
				if blank {
					var last bool
					next, last = tabs.next(column, &idx)
					if last {
						convert = false
					}
					if convert {
						if c == '\t' {
							column = next
							if len(pending) > 0 {
								pending[0] = '\t'
							}
						} else {
							column++
							if !(prevBlank && column == next) {
								if column == next {
									oneBlank = true
								}
								pending = append(pending, byte(c))
								prevBlank = true
								continue
							}
							c = '\t'
							if len(pending) > 0 {
								pending[0] = '\t'
							} else {
								pending = append(pending, '\t')
							}
						}
						if oneBlank {
							pending = pending[:1]
						} else {
							pending = pending[:0]
						}
					}
				} else if c == '\b' {
					if column > 0 {
						column--
					}
					next = column
					if idx > 0 {
						idx--
					}
				} else {
					column++
				}
				if len(pending) > 0 {
					if len(pending) > 1 && oneBlank {
						pending[0] = '\t'
					}
					out.Write(pending)
					pending = pending[:0]
					oneBlank = false
				}
				prevBlank = blank
				convert = convert && (all || blank)
			}
			if c < 0 {
				return
			}
			out.WriteByte(byte(c))
		}
	})
}
