package sysutils

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"fmt"
	"io"
	"math"
	mrand "math/rand/v2"
	"os"
	"strconv"
	"strings"

	"github.com/wasmbox/wasmbox/tools/internal/cmd"
)

func init() {
	cmd.Register("shuf", shufMain)
}

func shufMain(e *cmd.Env) int {
	opts, ops, err := cmd.Getopt(e.Args[1:], withHelp(
		cmd.Option{Short: 'e', Long: "echo"}, cmd.Option{Short: 'i', Long: "input-range", Arg: cmd.RequiredArg},
		cmd.Option{Short: 'n', Long: "head-count", Arg: cmd.RequiredArg}, cmd.Option{Short: 'o', Long: "output", Arg: cmd.RequiredArg},
		cmd.Option{Long: "random-source", Arg: cmd.RequiredArg}, cmd.Option{Short: 'r', Long: "repeat"},
		cmd.Option{Short: 'z', Long: "zero-terminated"}), false)
	if err != nil {
		return e.Usage(1, err)
	}
	if helpOrVersion(e, opts, "[OPTION]... [FILE]\n  or:  shuf -e [OPTION]... [ARG]...\n  or:  shuf -i LO-HI [OPTION]...\nWrite a random permutation of the input lines to standard output.\n  -e, --echo                treat each ARG as an input line\n  -i, --input-range=LO-HI   treat each number LO through HI as an input line\n  -n, --head-count=COUNT    output at most COUNT lines\n  -o, --output=FILE         write result to FILE instead of standard output\n      --random-source=FILE  get random bytes from FILE\n  -r, --repeat              output lines can be repeated\n  -z, --zero-terminated     line delimiter is NUL, not newline\n") {
		return 0
	}
	echo, repeat := false, false
	var lo, hi uint64
	hasRange := false
	count := uint64(math.MaxUint64)
	outFile, source := "", ""
	end := byte('\n')
	for _, o := range opts {
		switch o.Name {
		case "echo":
			echo = true
		case "input-range":
			if hasRange {
				e.Errorf("multiple -i options specified")
				return 1
			}
			a, b, ok := strings.Cut(o.Value, "-")
			var err error
			if lo, err = strconv.ParseUint(a, 10, 64); err != nil {
				e.Errorf("invalid input range: '%s'", a)
				return 1
			}
			if hi, err = strconv.ParseUint(b, 10, 64); !ok || err != nil {
				bad := b
				if !ok {
					bad = a
				}
				e.Errorf("invalid input range: '%s'", bad)
				return 1
			}
			if hi+1 < lo {
				e.Errorf("invalid input range: '%s'", o.Value)
				return 1
			}
			hasRange = true
		case "head-count":
			n, err := strconv.ParseUint(o.Value, 10, 64)
			if err != nil {
				e.Errorf("invalid line count: '%s'", o.Value)
				return 1
			}
			count = min(count, n)
		case "output":
			outFile = o.Value
		case "random-source":
			source = o.Value
		case "repeat":
			repeat = true
		case "zero-terminated":
			end = 0
		}
	}
	if echo && hasRange {
		e.Errorf("cannot combine -e and -i options")
		return e.Usage(1, nil)
	}
	var lines []string
	switch {
	case echo:
		lines = ops
	case hasRange:
		if len(ops) > 0 {
			return e.Usage(1, fmt.Errorf("extra operand '%s'", ops[0]))
		}
	default:
		if len(ops) > 1 {
			return e.Usage(1, fmt.Errorf("extra operand '%s'", ops[1]))
		}
		name := "-"
		if len(ops) == 1 {
			name = ops[0]
		}
		r, done, err := openInput(e, name)
		if err != nil {
			e.Errorf("%s: %s", name, errText(err))
			return 1
		}
		data, err := io.ReadAll(r)
		done()
		if err != nil {
			e.Errorf("%s: %s", name, errText(err))
			return 1
		}
		if len(data) > 0 {
			data = bytes.TrimSuffix(data, []byte{end})
			lines = strings.Split(string(data), string(end))
		}
	}
	rng, err := shufRand(source)
	if err != nil {
		e.Errorf("%s: %s", source, errText(err))
		return 1
	}
	out := e.Stdout
	if outFile != "" {
		f, err := os.Create(outFile)
		if err != nil {
			e.Errorf("%s: %s", outFile, errText(err))
			return 1
		}
		defer f.Close()
		out = f
	}
	w := bufio.NewWriterSize(out, 32*1024)
	n := uint64(len(lines))
	item := func(i uint64) string { return lines[i] }
	if hasRange {
		n = hi - lo + 1
		item = func(i uint64) string { return strconv.FormatUint(lo+i, 10) }
	}
	if repeat {
		if n == 0 {
			if count == 0 {
				return 0
			}
			e.Errorf("no lines to repeat")
			return 1
		}
		// Without -n this is endless: it stops when the reader is gone.
		for i := uint64(0); i < count; i++ {
			w.WriteString(item(rng.Uint64N(n)))
			if err := w.WriteByte(end); err != nil {
				return 1
			}
		}
	} else {
		k := min(count, n)
		// A partial Fisher-Yates over a sparse permutation: O(k) memory
		// even for huge -i ranges.
		swapped := map[uint64]uint64{}
		at := func(i uint64) uint64 {
			if v, ok := swapped[i]; ok {
				return v
			}
			return i
		}
		for i := uint64(0); i < k; i++ {
			j := i + rng.Uint64N(n-i)
			vi, vj := at(i), at(j)
			swapped[i], swapped[j] = vj, vi
			w.WriteString(item(vj))
			w.WriteByte(end)
		}
	}
	if err := w.Flush(); err != nil {
		e.Errorf("write error: %s", errText(err))
		return 1
	}
	return 0
}

// shufRand returns the generator: seeded from --random-source's first
// bytes when given (reproducible, though not GNU's sequence), otherwise
// from the system's randomness.
func shufRand(source string) (*mrand.Rand, error) {
	var seed [32]byte
	if source != "" {
		f, err := os.Open(source)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		if _, err := io.ReadFull(f, seed[:]); err != nil && err != io.ErrUnexpectedEOF && err != io.EOF {
			return nil, err
		}
	} else {
		rand.Read(seed[:])
	}
	return mrand.New(mrand.NewChaCha8(seed)), nil
}
