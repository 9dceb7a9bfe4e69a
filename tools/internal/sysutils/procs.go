package sysutils

import (
	"errors"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/wasmbox/wasmbox/tools/internal/cmd"
)

func init() {
	cmd.Register("env", envMain)
	cmd.Register("timeout", timeoutMain)
	cmd.Register("nice", niceMain)
	cmd.Register("nohup", nohupMain)
	cmd.Register("sleep", sleepMain)
}

// runChild spawns argv and maps the result to the exit status GNU tools
// use for a child: its own status, 126 when it cannot be run, 127 when it
// does not exist. msg formats the error for a command that did not run.
func runChild(e *cmd.Env, req cmd.SpawnRequest, msg func(reason string) string) int {
	status, err := e.Spawn(req)
	switch {
	case err == nil:
		return status
	case errors.Is(err, cmd.ErrNotFound):
		e.Errorf("%s", msg("No such file or directory"))
		return 127
	case errors.Is(err, cmd.ErrDenied):
		e.Errorf("%s", msg("Permission denied"))
		return 126
	}
	e.Errorf("%s", msg(err.Error()))
	return 126
}

func envMain(e *cmd.Env) int {
	args := e.Args[1:]
	opts, ops, err := cmd.Getopt(args, withHelp(
		cmd.Option{Short: 'i', Long: "ignore-environment"}, cmd.Option{Short: '0', Long: "null"},
		cmd.Option{Short: 'u', Long: "unset", Arg: cmd.RequiredArg}, cmd.Option{Short: 'C', Long: "chdir", Arg: cmd.RequiredArg},
		cmd.Option{Short: 'S', Long: "split-string", Arg: cmd.RequiredArg}, cmd.Option{Short: 'v', Long: "debug"}), true)
	if err != nil {
		return e.Usage(125, err)
	}
	if helpOrVersion(e, opts, "[OPTION]... [-] [NAME=VALUE]... [COMMAND [ARG]...]\nSet each NAME to VALUE in the environment and run COMMAND.\n  -i, --ignore-environment  start with an empty environment\n  -0, --null           end each output line with NUL, not newline\n  -u, --unset=NAME     remove variable from the environment\n  -C, --chdir=DIR      change working directory to DIR\n  -S, --split-string=S  process and split S into separate arguments\n") {
		return 0
	}
	ignore, null := false, false
	var unset []string
	dir := ""
	var split []string
	for _, o := range opts {
		switch o.Name {
		case "ignore-environment":
			ignore = true
		case "null":
			null = true
		case "unset":
			if o.Value == "" || strings.Contains(o.Value, "=") {
				e.Errorf("cannot unset '%s': Invalid argument", o.Value)
				return 125
			}
			unset = append(unset, o.Value)
		case "chdir":
			dir = o.Value
		case "split-string":
			words, err := splitString(o.Value)
			if err != nil {
				e.Errorf("%s", err.Error())
				return 125
			}
			split = append(split, words...)
		}
	}
	ops = append(split, ops...)
	if len(ops) > 0 && ops[0] == "-" {
		ignore, ops = true, ops[1:]
	}
	var env []string
	if !ignore {
		env = os.Environ()
	}
	set := func(kv string) {
		k, _, _ := strings.Cut(kv, "=")
		out := env[:0:0]
		for _, x := range env {
			if xk, _, _ := strings.Cut(x, "="); xk != k {
				out = append(out, x)
			}
		}
		env = append(out, kv)
	}
	for _, k := range unset {
		out := env[:0:0]
		for _, x := range env {
			if xk, _, _ := strings.Cut(x, "="); xk != k {
				out = append(out, x)
			}
		}
		env = out
	}
	for len(ops) > 0 && strings.Contains(ops[0], "=") && !strings.HasPrefix(ops[0], "=") {
		set(ops[0])
		ops = ops[1:]
	}
	if len(ops) == 0 {
		if dir != "" {
			e.Errorf("must specify command with --chdir (-C)")
			return e.Usage(125, nil)
		}
		end := "\n"
		if null {
			end = "\x00"
		}
		w, flush := output(e)
		for _, kv := range env {
			w.WriteString(kv + end)
		}
		return flush()
	}
	if null {
		e.Errorf("cannot specify --null (-0) with command")
		return e.Usage(125, nil)
	}
	if dir != "" {
		st, err := os.Stat(dir)
		if err == nil && !st.IsDir() {
			err = errors.New("Not a directory")
		}
		if err != nil {
			e.Errorf("cannot change directory to '%s': %s", dir, errText(err))
			return 125
		}
		if !strings.HasPrefix(dir, "/") {
			if wd, err := os.Getwd(); err == nil {
				dir = strings.TrimSuffix(wd, "/") + "/" + dir
			}
		}
	}
	if env == nil {
		env = []string{}
	}
	return runChild(e, cmd.SpawnRequest{Argv: ops, Env: env, Dir: dir}, func(reason string) string {
		return fmt.Sprintf("'%s': %s", ops[0], reason)
	})
}

// splitString splits env -S's argument: blanks separate words, single and
// double quotes group, backslash escapes (\t \n \_ for a space, \c ends).
func splitString(s string) ([]string, error) {
	var words []string
	var cur strings.Builder
	inWord := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		case c == '\'':
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				return nil, errors.New("no terminating quote in -S string")
			}
			cur.WriteString(s[i+1 : i+1+j])
			i += j + 1
			inWord = true
		case c == '"':
			i++
			for ; i < len(s) && s[i] != '"'; i++ {
				if s[i] == '\\' && i+1 < len(s) {
					i++
				}
				cur.WriteByte(s[i])
			}
			if i >= len(s) {
				return nil, errors.New("no terminating quote in -S string")
			}
			inWord = true
		case c == '\\' && i+1 < len(s):
			i++
			switch s[i] {
			case 'c':
				i = len(s)
				continue
			case '_':
				cur.WriteByte(' ')
			case 't':
				cur.WriteByte('\t')
			case 'n':
				cur.WriteByte('\n')
			default:
				cur.WriteByte(s[i])
			}
			inWord = true
		case c == '#' && !inWord:
			i = len(s)
		default:
			cur.WriteByte(c)
			inWord = true
		}
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words, nil
}

// parseDuration parses a sleep/timeout duration: a non-negative decimal
// number with an optional suffix s, m, h or d, or "inf"/"infinity".
func parseDuration(s string) (time.Duration, bool) {
	mult := 1.0
	num := s
	if n := len(s); n > 0 {
		switch s[n-1] {
		case 's':
			num = s[:n-1]
		case 'm':
			num, mult = s[:n-1], 60
		case 'h':
			num, mult = s[:n-1], 3600
		case 'd':
			num, mult = s[:n-1], 86400
		}
	}
	if l := strings.ToLower(s); l == "inf" || l == "infinity" {
		return time.Duration(math.MaxInt64), true
	}
	if num == "" || floatPrefix(num) != len(num) || strings.ContainsAny(strings.ToLower(num), "xn") {
		return 0, false
	}
	v, err := strconv.ParseFloat(num, 64)
	if err != nil || v < 0 || math.IsNaN(v) {
		return 0, false
	}
	sec := v * mult
	if sec >= math.MaxInt64/float64(time.Second) {
		return time.Duration(math.MaxInt64), true
	}
	return time.Duration(math.Ceil(sec * float64(time.Second))), true
}

func sleepMain(e *cmd.Env) int {
	opts, ops, err := cmd.Getopt(e.Args[1:], helpOpts, false)
	if err != nil {
		return e.Usage(1, err)
	}
	if helpOrVersion(e, opts, "NUMBER[SUFFIX]...\nPause for NUMBER seconds (s), minutes (m), hours (h) or days (d);\nNUMBER may be a floating-point number; several are added up.\n") {
		return 0
	}
	if len(ops) == 0 {
		return e.Usage(1, fmt.Errorf("missing operand"))
	}
	var total time.Duration
	bad := false
	for _, a := range ops {
		d, ok := parseDuration(a)
		if !ok {
			e.Errorf("invalid time interval '%s'", a)
			bad = true
			continue
		}
		if total > math.MaxInt64-d {
			total = math.MaxInt64
		} else {
			total += d
		}
	}
	if bad {
		return e.Usage(1, nil)
	}
	time.Sleep(total)
	return 0
}

func timeoutMain(e *cmd.Env) int {
	opts, ops, err := cmd.Getopt(e.Args[1:], withHelp(
		cmd.Option{Short: 's', Long: "signal", Arg: cmd.RequiredArg}, cmd.Option{Short: 'k', Long: "kill-after", Arg: cmd.RequiredArg},
		cmd.Option{Long: "preserve-status"}, cmd.Option{Long: "foreground"}, cmd.Option{Short: 'v', Long: "verbose"}), true)
	if err != nil {
		return e.Usage(125, err)
	}
	if helpOrVersion(e, opts, "[OPTION] DURATION COMMAND [ARG]...\nStart COMMAND, and kill it if still running after DURATION.\n  -s, --signal=SIGNAL     (accepted; the sandbox always kills)\n  -k, --kill-after=DURATION  (accepted)\n      --preserve-status   exit with the same status as COMMAND, even on timeout\n  -v, --verbose           diagnose to stderr any signal sent upon timeout\nIf the command times out, and --preserve-status is not set, exit with status 124.\n") {
		return 0
	}
	preserve, verbose := false, false
	signal := "TERM"
	for _, o := range opts {
		switch o.Name {
		case "preserve-status":
			preserve = true
		case "verbose":
			verbose = true
		case "signal":
			signal = strings.TrimPrefix(strings.ToUpper(o.Value), "SIG")
			if signal == "" {
				e.Errorf("%s: invalid signal", o.Value)
				return e.Usage(125, nil)
			}
		case "kill-after":
			if _, ok := parseDuration(o.Value); !ok {
				e.Errorf("invalid time interval '%s'", o.Value)
				return e.Usage(125, nil)
			}
		}
	}
	if len(ops) < 2 {
		return e.Usage(125, nil) // GNU says no more than this
	}
	d, ok := parseDuration(ops[0])
	if !ok {
		e.Errorf("invalid time interval '%s'", ops[0])
		return e.Usage(125, nil)
	}
	argv := ops[1:]
	status := runChild(e, cmd.SpawnRequest{Argv: argv, Timeout: d}, func(reason string) string {
		return fmt.Sprintf("failed to run command '%s': %s", argv[0], reason)
	})
	if status == cmd.StatusTimedOut && d > 0 {
		if verbose {
			e.Errorf("sending signal %s to command '%s'", signal, argv[0])
		}
		if preserve {
			return 128 + signalNumber(signal)
		}
	}
	return status
}

// signalNumber maps a signal name or number to its Linux number (TERM for
// anything unknown).
func signalNumber(name string) int {
	if n, err := strconv.Atoi(name); err == nil {
		return n
	}
	nums := map[string]int{"HUP": 1, "INT": 2, "QUIT": 3, "ABRT": 6, "KILL": 9, "USR1": 10, "SEGV": 11, "USR2": 12, "PIPE": 13, "ALRM": 14, "TERM": 15}
	if n, ok := nums[name]; ok {
		return n
	}
	return 15
}

func niceMain(e *cmd.Env) int {
	// "nice -5 cmd" is the obsolete form of "nice -n 5 cmd".
	args := e.Args[1:]
	if len(args) > 0 && len(args[0]) > 1 && args[0][0] == '-' && strings.Trim(args[0][1:], "0123456789") == "" {
		args = append([]string{"-n", args[0][1:]}, args[1:]...)
	}
	opts, ops, err := cmd.Getopt(args, withHelp(cmd.Option{Short: 'n', Long: "adjustment", Arg: cmd.RequiredArg}), true)
	if err != nil {
		return e.Usage(125, err)
	}
	if helpOrVersion(e, opts, "[OPTION] [COMMAND [ARG]...]\nRun COMMAND with an adjusted niceness (the sandbox schedules every command\nalike). With no COMMAND, print the current niceness.\n  -n, --adjustment=N   add integer N to the niceness (default 10)\n") {
		return 0
	}
	for _, o := range opts {
		if o.Name == "adjustment" {
			if _, err := strconv.Atoi(strings.TrimPrefix(o.Value, "+")); err != nil {
				e.Errorf("invalid adjustment '%s'", o.Value)
				return e.Usage(125, nil)
			}
		}
	}
	if len(ops) == 0 {
		if len(opts) > 0 {
			e.Errorf("a command must be given with an adjustment")
			return e.Usage(125, nil)
		}
		fmt.Fprintln(e.Stdout, 0)
		return 0
	}
	return runChild(e, cmd.SpawnRequest{Argv: ops}, func(reason string) string {
		return fmt.Sprintf("'%s': %s", ops[0], reason)
	})
}

func nohupMain(e *cmd.Env) int {
	opts, ops, err := cmd.Getopt(e.Args[1:], helpOpts, true)
	if err != nil {
		return e.Usage(125, err)
	}
	if helpOrVersion(e, opts, "COMMAND [ARG]...\nRun COMMAND, ignoring hangup signals (the sandbox sends none).\n") {
		return 0
	}
	if len(ops) == 0 {
		return e.Usage(125, fmt.Errorf("missing operand"))
	}
	return runChild(e, cmd.SpawnRequest{Argv: ops}, func(reason string) string {
		return fmt.Sprintf("failed to run command '%s': %s", ops[0], reason)
	})
}
