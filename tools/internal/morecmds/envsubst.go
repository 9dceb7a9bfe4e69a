package morecmds

import (
	"bufio"
	"io"
	"os"

	"github.com/wasmbox/wasmbox/tools/internal/cmd"
)

func init() { cmd.Register("envsubst", envsubstMain) }

func isNameStart(c byte) bool { return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
func isNameChar(c byte) bool  { return isNameStart(c) || c >= '0' && c <= '9' }

// shellVars scans s for $NAME and ${NAME} references as gettext's envsubst
// does, calling fn with the text before each reference (lit) and the
// reference's name and full text. The text after the last reference is
// passed with name "".
func shellVars(s string, fn func(lit, name, ref string)) {
	start := 0
	for i := 0; i < len(s); i++ {
		if s[i] != '$' || i+1 >= len(s) {
			continue
		}
		j, braced := i+1, false
		if s[j] == '{' {
			braced = true
			j++
		}
		if j >= len(s) || !isNameStart(s[j]) {
			continue
		}
		k := j
		for k < len(s) && isNameChar(s[k]) {
			k++
		}
		end := k
		if braced {
			if k >= len(s) || s[k] != '}' {
				continue
			}
			end = k + 1
		}
		fn(s[start:i], s[j:k], s[i:end])
		start = end
		i = end - 1
	}
	fn(s[start:], "", "")
}

// envsubstMain is gettext's envsubst: it replaces $NAME and ${NAME} in
// standard input with the environment's values (empty when unset), or
// only the names that SHELL-FORMAT mentions; -v lists those names.
func envsubstMain(e *cmd.Env) int {
	opts, ops, err := cmd.Getopt(e.Args[1:], []cmd.Option{{Short: 'v', Long: "variables"}, {Short: 'h', Long: "help"}, {Short: 'V', Long: "version"}}, false)
	if err != nil {
		return e.Usage(1, err)
	}
	list := false
	for _, o := range opts {
		switch o.Name {
		case "help":
			io.WriteString(e.Stdout, "Usage: envsubst [OPTION] [SHELL-FORMAT]\n")
			return 0
		case "version":
			io.WriteString(e.Stdout, "envsubst "+version+"\n")
			return 0
		case "variables":
			list = true
		}
	}
	switch {
	case len(ops) > 1:
		e.Errorf("too many arguments")
		return 1
	case list && len(ops) == 0:
		e.Errorf("missing arguments")
		return 1
	}
	out := bufio.NewWriter(e.Stdout)
	if list {
		shellVars(ops[0], func(_, name, _ string) {
			if name != "" {
				out.WriteString(name + "\n")
			}
		})
		return flush(e, out, 0)
	}
	var only map[string]bool
	if len(ops) == 1 {
		only = map[string]bool{}
		shellVars(ops[0], func(_, name, _ string) { only[name] = true })
	}
	in := bufio.NewReaderSize(e.Stdin, 64<<10)
	for {
		line, err := in.ReadString('\n')
		shellVars(line, func(lit, name, ref string) {
			out.WriteString(lit)
			switch {
			case name == "":
			case only != nil && !only[name]:
				out.WriteString(ref)
			default:
				out.WriteString(os.Getenv(name))
			}
		})
		if err != nil {
			if err != io.EOF {
				out.Flush()
				e.Errorf("error while reading \"standard input\": %s", strerror(err))
				return 1
			}
			break
		}
	}
	return flush(e, out, 0)
}
