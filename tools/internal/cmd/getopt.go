package cmd

import (
	"fmt"
	"strings"
)

// Option describes one option of a command for Getopt.
type Option struct {
	Short byte   // the short letter, or 0
	Long  string // the long name without "--", or ""
	Arg   ArgKind
}

// ArgKind says whether an option takes an argument.
type ArgKind int

// Kinds of option arguments.
const (
	NoArg       ArgKind = iota
	RequiredArg         // -x VAL, -xVAL, --x VAL, --x=VAL
	OptionalArg         // -xVAL, --x=VAL only
)

// Opt is one option found by Getopt.
type Opt struct {
	// Name is the long name when the option has one, else the short
	// letter as a string: callers switch on one name per option.
	Name     string
	Value    string
	HasValue bool
}

// UsageError is a command-line error in GNU wording ("invalid option --
// 'x'"); print it with Env.Usage.
type UsageError struct{ Msg string }

func (e *UsageError) Error() string { return e.Msg }

// Getopt parses args (without argv[0]) GNU-style: grouped short options
// (-abc, -n5, -n 5), long options and unambiguous prefixes of them
// (--number=5, --num 5), "--" ending the options, and a lone "-" as an
// operand. Options and operands may be mixed unless stopAtOperand is set
// (for commands that run another command: env, nice, xargs...), in which
// case the first operand ends the options.
func Getopt(args []string, spec []Option, stopAtOperand bool) (opts []Opt, operands []string, err error) {
	name := func(o Option) string {
		if o.Long != "" {
			return o.Long
		}
		return string(o.Short)
	}
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			return opts, append(operands, args[i+1:]...), nil
		case strings.HasPrefix(a, "--"):
			key, val, hasVal := strings.Cut(a[2:], "=")
			var match *Option
			exact := false
			var candidates []string
			for j := range spec {
				o := &spec[j]
				if o.Long == "" || !strings.HasPrefix(o.Long, key) {
					continue
				}
				if o.Long == key {
					match, exact = o, true
					break
				}
				candidates = append(candidates, "'--"+o.Long+"'")
				match = o
			}
			if !exact && len(candidates) > 1 {
				return nil, nil, &UsageError{fmt.Sprintf("option '%s' is ambiguous; possibilities: %s", "--"+key, strings.Join(candidates, " "))}
			}
			if match == nil {
				return nil, nil, &UsageError{fmt.Sprintf("unrecognized option '%s'", a)}
			}
			switch {
			case match.Arg == NoArg && hasVal:
				return nil, nil, &UsageError{fmt.Sprintf("option '--%s' doesn't allow an argument", match.Long)}
			case match.Arg == RequiredArg && !hasVal:
				if i+1 >= len(args) {
					return nil, nil, &UsageError{fmt.Sprintf("option '--%s' requires an argument", match.Long)}
				}
				i++
				val, hasVal = args[i], true
			}
			opts = append(opts, Opt{Name: name(*match), Value: val, HasValue: hasVal})
		case len(a) > 1 && a[0] == '-':
			for k := 1; k < len(a); k++ {
				c := a[k]
				var match *Option
				for j := range spec {
					if spec[j].Short == c && c != 0 {
						match = &spec[j]
						break
					}
				}
				if match == nil {
					return nil, nil, &UsageError{fmt.Sprintf("invalid option -- '%c'", c)}
				}
				if match.Arg == NoArg {
					opts = append(opts, Opt{Name: name(*match)})
					continue
				}
				if k+1 < len(a) {
					opts = append(opts, Opt{Name: name(*match), Value: a[k+1:], HasValue: true})
				} else if match.Arg == RequiredArg {
					if i+1 >= len(args) {
						return nil, nil, &UsageError{fmt.Sprintf("option requires an argument -- '%c'", c)}
					}
					i++
					opts = append(opts, Opt{Name: name(*match), Value: args[i], HasValue: true})
				} else {
					opts = append(opts, Opt{Name: name(*match)})
				}
				break
			}
		default:
			if stopAtOperand {
				return opts, append(operands, args[i:]...), nil
			}
			operands = append(operands, a)
		}
	}
	return opts, operands, nil
}

// Usage prints a command-line error the GNU way ("NAME: MSG" and "Try
// 'NAME --help' for more information.") and returns status, so that
// commands can write `return e.Usage(status, err)`.
func (e *Env) Usage(status int, err error) int {
	if err != nil {
		e.Errorf("%s", err.Error())
	}
	fmt.Fprintf(e.Stderr, "Try '%s --help' for more information.\n", e.Name())
	return status
}
