package sysutils

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"

	"github.com/wasmbox/wasmbox/tools/internal/cmd"
)

func init() {
	cmd.Register("true", func(*cmd.Env) int { return 0 })
	cmd.Register("false", func(*cmd.Env) int { return 1 })
	cmd.Register("yes", yes)
	cmd.Register("pwd", pwd)
	cmd.Register("whoami", whoami)
	cmd.Register("id", id)
	cmd.Register("hostname", hostname)
	cmd.Register("uname", uname)
	cmd.Register("nproc", nproc)
	cmd.Register("basename", basename)
	cmd.Register("dirname", dirname)
	cmd.Register("printenv", printenv)
}

// The identity the sandbox reports: never the host's.
const (
	sandboxUser     = "user"
	sandboxUID      = 1000
	sandboxGID      = 1000
	sandboxHost     = "wasmbox"
	sandboxSysname  = "Linux"
	sandboxRelease  = "6.1.0-wasmbox"
	sandboxVersion  = "#1 SMP wasmbox"
	sandboxMachine  = "wasm32"
	sandboxOS       = "GNU/Linux"
	unknownPlatform = "unknown"
)

func yes(e *cmd.Env) int {
	args := e.Args[1:]
	if len(args) == 1 && (args[0] == "--help" || args[0] == "--version") {
		opts, _, _ := cmd.Getopt(args, helpOpts, false)
		helpOrVersion(e, opts, "[STRING]...\nRepeatedly output a line with all specified STRING(s), or 'y'.\n")
		return 0
	}
	if len(args) > 0 && args[0] == "--" {
		args = args[1:]
	}
	line := "y\n"
	if len(args) > 0 {
		line = strings.Join(args, " ") + "\n"
	}
	// Write in big blocks: yes is often used to produce bulk input.
	block := []byte(strings.Repeat(line, max(1, 8192/len(line))))
	for {
		if _, err := e.Stdout.Write(block); err != nil {
			return 1
		}
	}
}

func pwd(e *cmd.Env) int {
	opts, ops, err := cmd.Getopt(e.Args[1:], withHelp(cmd.Option{Short: 'L', Long: "logical"}, cmd.Option{Short: 'P', Long: "physical"}), false)
	if err != nil {
		return e.Usage(1, err)
	}
	if helpOrVersion(e, opts, "[OPTION]...\nPrint the full filename of the current working directory.\n  -L  use PWD from environment, even if it contains symlinks\n  -P  resolve all symlinks (default)\n") {
		return 0
	}
	if len(ops) > 0 {
		e.Errorf("ignoring non-option arguments")
	}
	logical := false
	for _, o := range opts {
		logical = o.Name == "logical"
	}
	dir, err := os.Getwd()
	if err != nil {
		e.Errorf("%s", errText(err))
		return 1
	}
	if p := os.Getenv("PWD"); logical && filepath.IsAbs(p) {
		if a, err1 := os.Stat(p); err1 == nil {
			if b, err2 := os.Stat(dir); err2 == nil && os.SameFile(a, b) {
				dir = p
			}
		}
	} else if r, err := filepath.EvalSymlinks(dir); err == nil {
		dir = r
	}
	fmt.Fprintln(e.Stdout, dir)
	return 0
}

func userName() string { return getenv("USER", sandboxUser) }

func whoami(e *cmd.Env) int {
	opts, ops, err := cmd.Getopt(e.Args[1:], helpOpts, false)
	if err != nil {
		return e.Usage(1, err)
	}
	if helpOrVersion(e, opts, "\nPrint the user name of the current user.\n") {
		return 0
	}
	if len(ops) > 0 {
		return e.Usage(1, fmt.Errorf("extra operand '%s'", ops[0]))
	}
	fmt.Fprintln(e.Stdout, userName())
	return 0
}

func id(e *cmd.Env) int {
	opts, ops, err := cmd.Getopt(e.Args[1:], withHelp(
		cmd.Option{Short: 'u', Long: "user"}, cmd.Option{Short: 'g', Long: "group"},
		cmd.Option{Short: 'G', Long: "groups"}, cmd.Option{Short: 'n', Long: "name"},
		cmd.Option{Short: 'r', Long: "real"}, cmd.Option{Short: 'z', Long: "zero"}), false)
	if err != nil {
		return e.Usage(1, err)
	}
	if helpOrVersion(e, opts, "[OPTION]... [USER]\nPrint user and group information.\n  -u  only the user ID\n  -g  only the group ID\n  -G  all group IDs\n  -n  a name instead of a number\n") {
		return 0
	}
	var which byte
	name, zero := false, false
	for _, o := range opts {
		switch o.Name {
		case "user":
			which = 'u'
		case "group":
			which = 'g'
		case "groups":
			which = 'G'
		case "name":
			name = true
		case "zero":
			zero = true
		}
	}
	u := userName()
	if len(ops) > 1 {
		return e.Usage(1, fmt.Errorf("extra operand '%s'", ops[1]))
	}
	if len(ops) == 1 && ops[0] != u && ops[0] != strconv.Itoa(sandboxUID) {
		e.Errorf("'%s': no such user", ops[0])
		return 1
	}
	if which == 0 && (name || zero) {
		e.Errorf("cannot print only names or real IDs in default format")
		return 1
	}
	end := "\n"
	if zero {
		end = "\x00"
	}
	switch which {
	case 'u':
		if name {
			fmt.Fprint(e.Stdout, u+end)
		} else {
			fmt.Fprint(e.Stdout, strconv.Itoa(sandboxUID)+end)
		}
	case 'g', 'G':
		if name {
			fmt.Fprint(e.Stdout, u+end)
		} else {
			fmt.Fprint(e.Stdout, strconv.Itoa(sandboxGID)+end)
		}
	default:
		fmt.Fprintf(e.Stdout, "uid=%d(%s) gid=%d(%s) groups=%d(%s)\n", sandboxUID, u, sandboxGID, u, sandboxGID, u)
	}
	return 0
}

func hostName() string { return getenv("HOSTNAME", sandboxHost) }

func hostname(e *cmd.Env) int {
	opts, ops, err := cmd.Getopt(e.Args[1:], withHelp(
		cmd.Option{Short: 's', Long: "short"}, cmd.Option{Short: 'f', Long: "fqdn"},
		cmd.Option{Short: 'i', Long: "ip-address"}, cmd.Option{Short: 'I', Long: "all-ip-addresses"}), false)
	if err != nil {
		return e.Usage(1, err)
	}
	if helpOrVersion(e, opts, "[-s|-f|-i|-I]\nShow the system's host name.\n") {
		return 0
	}
	if len(ops) > 0 {
		e.Errorf("you must be root to change the host name")
		return 1
	}
	h := hostName()
	for _, o := range opts {
		switch o.Name {
		case "short":
			h, _, _ = strings.Cut(h, ".")
		case "ip-address", "all-ip-addresses":
			h = "127.0.0.1"
		}
	}
	fmt.Fprintln(e.Stdout, h)
	return 0
}

func uname(e *cmd.Env) int {
	spec := []cmd.Option{
		{Short: 'a', Long: "all"}, {Short: 's', Long: "kernel-name"}, {Short: 'n', Long: "nodename"},
		{Short: 'r', Long: "kernel-release"}, {Short: 'v', Long: "kernel-version"}, {Short: 'm', Long: "machine"},
		{Short: 'p', Long: "processor"}, {Short: 'i', Long: "hardware-platform"}, {Short: 'o', Long: "operating-system"},
	}
	opts, ops, err := cmd.Getopt(e.Args[1:], withHelp(spec...), false)
	if err != nil {
		return e.Usage(1, err)
	}
	if helpOrVersion(e, opts, "[OPTION]...\nPrint system information (of the sandbox). With no OPTION, same as -s.\n  -a -s -n -r -v -m -p -i -o\n") {
		return 0
	}
	if len(ops) > 0 {
		return e.Usage(1, fmt.Errorf("extra operand '%s'", ops[0]))
	}
	want := map[string]bool{}
	all := false
	for _, o := range opts {
		want[o.Name] = true
		all = all || o.Name == "all"
	}
	if len(want) == 0 {
		want["kernel-name"] = true
	}
	var parts []string
	add := func(key, val string, inAll bool) {
		if want[key] || (all && inAll) {
			parts = append(parts, val)
		}
	}
	add("kernel-name", sandboxSysname, true)
	add("nodename", hostName(), true)
	add("kernel-release", sandboxRelease, true)
	add("kernel-version", sandboxVersion, true)
	add("machine", sandboxMachine, true)
	add("processor", unknownPlatform, false)
	add("hardware-platform", unknownPlatform, false)
	add("operating-system", sandboxOS, true)
	fmt.Fprintln(e.Stdout, strings.Join(parts, " "))
	return 0
}

func nproc(e *cmd.Env) int {
	opts, ops, err := cmd.Getopt(e.Args[1:], withHelp(cmd.Option{Long: "all"}, cmd.Option{Long: "ignore", Arg: cmd.RequiredArg}), false)
	if err != nil {
		return e.Usage(1, err)
	}
	if helpOrVersion(e, opts, "[OPTION]...\nPrint the number of processing units available.\n      --all       all installed processors\n      --ignore=N  if possible, exclude N processing units\n") {
		return 0
	}
	if len(ops) > 0 {
		return e.Usage(1, fmt.Errorf("extra operand '%s'", ops[0]))
	}
	n := runtime.NumCPU()
	all := false
	ignore := 0
	for _, o := range opts {
		switch o.Name {
		case "all":
			all = true
		case "ignore":
			v, err := strconv.Atoi(o.Value)
			if err != nil || v < 0 {
				e.Errorf("invalid number: '%s'", o.Value)
				return 1
			}
			ignore = v
		}
	}
	if !all {
		if v, err := strconv.Atoi(os.Getenv("OMP_NUM_THREADS")); err == nil && v > 0 {
			n = v
		}
		if v, err := strconv.Atoi(os.Getenv("OMP_THREAD_LIMIT")); err == nil && v > 0 && v < n {
			n = v
		}
	}
	fmt.Fprintln(e.Stdout, max(1, n-ignore))
	return 0
}

func basename(e *cmd.Env) int {
	opts, ops, err := cmd.Getopt(e.Args[1:], withHelp(
		cmd.Option{Short: 'a', Long: "multiple"}, cmd.Option{Short: 's', Long: "suffix", Arg: cmd.RequiredArg},
		cmd.Option{Short: 'z', Long: "zero"}), false)
	if err != nil {
		return e.Usage(1, err)
	}
	if helpOrVersion(e, opts, "NAME [SUFFIX]\n  or:  basename OPTION... NAME...\nPrint NAME with any leading directory components removed.\n  -a, --multiple       support multiple arguments\n  -s, --suffix=SUFFIX  remove a trailing SUFFIX; implies -a\n  -z, --zero           end each output line with NUL\n") {
		return 0
	}
	multiple, suffix, end := false, "", "\n"
	for _, o := range opts {
		switch o.Name {
		case "multiple":
			multiple = true
		case "suffix":
			multiple, suffix = true, o.Value
		case "zero":
			end = "\x00"
		}
	}
	if len(ops) == 0 {
		return e.Usage(1, fmt.Errorf("missing operand"))
	}
	if !multiple {
		if len(ops) > 2 {
			return e.Usage(1, fmt.Errorf("extra operand '%s'", ops[2]))
		}
		if len(ops) == 2 {
			suffix = ops[1]
		}
		ops = ops[:1]
	}
	w, flush := output(e)
	for _, name := range ops {
		w.WriteString(baseOf(name, suffix) + end)
	}
	return flush()
}

// baseOf is POSIX basename: trailing slashes are ignored, "/" stays "/",
// and suffix is removed unless it is the whole name.
func baseOf(name, suffix string) string {
	if name == "" {
		return ""
	}
	s := strings.TrimRight(name, "/")
	if s == "" {
		return "/"
	}
	if i := strings.LastIndexByte(s, '/'); i >= 0 {
		s = s[i+1:]
	}
	if suffix != "" && s != suffix && strings.HasSuffix(s, suffix) {
		s = strings.TrimSuffix(s, suffix)
	}
	return s
}

func dirname(e *cmd.Env) int {
	opts, ops, err := cmd.Getopt(e.Args[1:], withHelp(cmd.Option{Short: 'z', Long: "zero"}), false)
	if err != nil {
		return e.Usage(1, err)
	}
	if helpOrVersion(e, opts, "[OPTION] NAME...\nOutput each NAME with its last non-slash component and trailing slashes\nremoved; if NAME contains no /'s, output '.'.\n  -z, --zero  end each output line with NUL\n") {
		return 0
	}
	end := "\n"
	if len(opts) > 0 {
		end = "\x00"
	}
	if len(ops) == 0 {
		return e.Usage(1, fmt.Errorf("missing operand"))
	}
	w, flush := output(e)
	for _, name := range ops {
		w.WriteString(dirOf(name) + end)
	}
	return flush()
}

// dirOf is POSIX dirname.
func dirOf(name string) string {
	s := strings.TrimRight(name, "/")
	if s == "" {
		if strings.HasPrefix(name, "/") {
			return "/"
		}
		return "."
	}
	i := strings.LastIndexByte(s, '/')
	if i < 0 {
		return "."
	}
	s = strings.TrimRight(s[:i], "/")
	if s == "" {
		return "/"
	}
	return s
}

func printenv(e *cmd.Env) int {
	opts, ops, err := cmd.Getopt(e.Args[1:], withHelp(cmd.Option{Short: '0', Long: "null"}), false)
	if err != nil {
		return e.Usage(2, err)
	}
	if helpOrVersion(e, opts, "[OPTION]... [VARIABLE]...\nPrint the values of the specified environment VARIABLE(s).\nIf no VARIABLE is specified, print name and value pairs for them all.\n  -0, --null  end each output line with NUL, not newline\n") {
		return 0
	}
	end := "\n"
	if len(opts) > 0 {
		end = "\x00"
	}
	w, flush := output(e)
	if len(ops) == 0 {
		for _, kv := range os.Environ() {
			w.WriteString(kv + end)
		}
		return flush()
	}
	status := 0
	for _, name := range ops {
		v, ok := os.LookupEnv(name)
		if !ok || strings.Contains(name, "=") {
			status = 1
			continue
		}
		w.WriteString(v + end)
	}
	if flush() != 0 {
		return 2
	}
	return status
}
