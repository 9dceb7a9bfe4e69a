package jqcmd

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"regexp"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/wasmbox/wasmbox/tools/internal/cmd"
)

// yq is jq over YAML, as the Python yq (kislyuk/yq, Debian's yq) is: every
// YAML document of the inputs becomes a JSON text, keys in document order,
// and jq (this package's, gojq inside) runs the filter over them; its
// output is JSON, or YAML with -y. gopkg.in/yaml.v3 parses the YAML (it was
// already in the module graph), and the YAML output is written here in
// PyYAML's block style so that -y prints what the Python yq prints.
func init() { cmd.Register("yq", yqMain) }

const yqUsage = `usage: yq [-h] [--yaml-output] [--yaml-roundtrip]
          [--yaml-output-grammar-version {1.1,1.2}] [--width WIDTH]
          [--indentless-lists] [--in-place] [--version]
          [jq_filter] [files ...]
`

// jqArgOptions are jq's options that take arguments, and how many.
var jqArgOptions = map[string]int{"--arg": 2, "--argjson": 2, "--slurpfile": 2, "--rawfile": 2, "--indent": 1, "-f": 1, "--from-file": 1}

func yqMain(e *cmd.Env) int {
	var jqArgs []string
	var filter *string
	var files []string
	yamlOut, indentless := false, false
	width := 80
	args := e.Args[1:]
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "-y" || a == "--yaml-output" || a == "-Y" || a == "--yaml-roundtrip":
			yamlOut = true
		case a == "--indentless-lists" || a == "--indentless":
			indentless = true
		case a == "-w" || a == "--width":
			if i+1 < len(args) {
				i++
				n, err := strconv.Atoi(args[i])
				if err != nil {
					fmt.Fprint(e.Stderr, yqUsage)
					fmt.Fprintf(e.Stderr, "yq: error: argument --width/-w: invalid int value: '%s'\n", args[i])
					return 2
				}
				width = n
			}
		case a == "-h" || a == "--help":
			fmt.Fprint(e.Stdout, yqUsage)
			return 0
		case a == "--version":
			fmt.Fprintf(e.Stdout, "yq %s\n", version)
			return 0
		case a == "--":
			for _, r := range args[i+1:] {
				if filter == nil {
					s := r
					filter = &s
				} else {
					files = append(files, r)
				}
			}
			i = len(args)
		case jqArgOptions[a] > 0:
			n := jqArgOptions[a]
			jqArgs = append(jqArgs, args[i:min(i+1+n, len(args))]...)
			i += n
		case len(a) > 1 && a[0] == '-':
			jqArgs = append(jqArgs, a)
		case filter == nil:
			s := a
			filter = &s
		default:
			files = append(files, a)
		}
	}
	if filter == nil {
		f := "."
		filter = &f
	}
	// Read and convert the inputs first: a missing file is an argument
	// error, reported before anything runs.
	var texts [][]byte
	for _, name := range files {
		if _, err := readAllInput(e, name); err != nil {
			fmt.Fprint(e.Stderr, yqUsage)
			fmt.Fprintf(e.Stderr, "yq: error: argument files: can't open '%s': [Errno %d] %s: '%s'\n", name, errnoNumber(err), strerror(err), name)
			return 2
		}
	}
	for _, name := range inputs(files) {
		data, err := readAllInput(e, name)
		if err != nil {
			e.Errorf("%s", strerror(err))
			return 1
		}
		dec := yaml.NewDecoder(bytes.NewReader(data))
		for {
			var n yaml.Node
			err := dec.Decode(&n)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				fmt.Fprintf(e.Stderr, "yq: Error running jq: %s\n", strings.TrimPrefix(err.Error(), "yaml: "))
				return 1
			}
			var b bytes.Buffer
			if err := yamlToJSON(&b, &n); err != nil {
				fmt.Fprintf(e.Stderr, "yq: Error running jq: %s\n", err)
				return 1
			}
			b.WriteByte('\n')
			texts = append(texts, b.Bytes())
		}
	}
	jqArgv := []string{"jq"}
	if yamlOut {
		jqArgv = append(jqArgv, "-c")
	}
	jqArgv = append(append(jqArgv, jqArgs...), *filter)
	var stdout io.Writer = e.Stdout
	var captured bytes.Buffer
	if yamlOut {
		stdout = &captured
	}
	status := jqMain(&cmd.Env{Args: jqArgv, Stdin: bytes.NewReader(bytes.Join(texts, nil)), Stdout: stdout, Stderr: e.Stderr})
	if !yamlOut {
		return status
	}
	out := bufio.NewWriter(e.Stdout)
	y := &yamlWriter{w: out, width: width, indentless: indentless}
	dec := json.NewDecoder(&captured)
	dec.UseNumber()
	for {
		v, err := decodeOrdered(dec)
		if err == io.EOF {
			break
		}
		if err != nil {
			// Raw (-r) output is not JSON: pass it through.
			out.Write(captured.Bytes())
			break
		}
		y.document(v)
	}
	y.end()
	t := &tool{e: e, out: out}
	return t.flush(status)
}

func errnoNumber(err error) int {
	switch strerror(err) {
	case "No such file or directory":
		return 2
	case "Permission denied":
		return 13
	case "Is a directory":
		return 21
	}
	return 5
}

// yamlToJSON writes the JSON text of a YAML node, keeping mapping order.
func yamlToJSON(b *bytes.Buffer, n *yaml.Node) error {
	switch n.Kind {
	case yaml.DocumentNode:
		if len(n.Content) == 0 {
			b.WriteString("null")
			return nil
		}
		return yamlToJSON(b, n.Content[0])
	case yaml.AliasNode:
		return yamlToJSON(b, n.Alias)
	case yaml.SequenceNode:
		b.WriteByte('[')
		for i, c := range n.Content {
			if i > 0 {
				b.WriteByte(',')
			}
			if err := yamlToJSON(b, c); err != nil {
				return err
			}
		}
		b.WriteByte(']')
	case yaml.MappingNode:
		b.WriteByte('{')
		first := true
		var pair func(k, v *yaml.Node) error
		pair = func(k, v *yaml.Node) error {
			if k.Tag == "!!merge" || k.Value == "<<" && k.Style == 0 && k.Kind == yaml.ScalarNode {
				src := v
				if src.Kind == yaml.AliasNode {
					src = src.Alias
				}
				if src.Kind == yaml.MappingNode {
					for i := 0; i+1 < len(src.Content); i += 2 {
						if err := pair(src.Content[i], src.Content[i+1]); err != nil {
							return err
						}
					}
					return nil
				}
			}
			if !first {
				b.WriteByte(',')
			}
			first = false
			key := k.Value
			if k.Kind == yaml.AliasNode {
				key = k.Alias.Value
			}
			kb, _ := json.Marshal(key)
			b.Write(kb)
			b.WriteByte(':')
			return yamlToJSON(b, v)
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			if err := pair(n.Content[i], n.Content[i+1]); err != nil {
				return err
			}
		}
		b.WriteByte('}')
	case yaml.ScalarNode:
		switch n.ShortTag() {
		case "!!null":
			b.WriteString("null")
		case "!!bool":
			var v bool
			if err := n.Decode(&v); err != nil {
				return err
			}
			b.WriteString(strconv.FormatBool(v))
		case "!!int":
			var v big.Int
			s := strings.ReplaceAll(n.Value, "_", "")
			base := 0
			if strings.HasPrefix(s, "0o") {
				s, base = s[2:], 8
			}
			if _, ok := v.SetString(s, base); !ok {
				return fmt.Errorf("invalid integer %q", n.Value)
			}
			b.WriteString(v.String())
		case "!!float":
			var v float64
			if err := n.Decode(&v); err != nil {
				return err
			}
			fb, err := json.Marshal(v)
			if err != nil {
				return fmt.Errorf("cannot represent %s in JSON", n.Value)
			}
			if strings.ContainsAny(n.Value, ".eE") && !bytes.ContainsAny(fb, ".eE") {
				fb = append(fb, ".0"...)
			}
			b.Write(fb)
		default:
			sb, _ := json.Marshal(n.Value)
			b.Write(sb)
		}
	}
	return nil
}

// orderedMap is a JSON object with its keys in order.
type orderedMap struct {
	keys []string
	vals []any
}

func decodeOrdered(dec *json.Decoder) (any, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			m := &orderedMap{}
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return nil, err
				}
				v, err := decodeOrdered(dec)
				if err != nil {
					return nil, err
				}
				m.keys = append(m.keys, kt.(string))
				m.vals = append(m.vals, v)
			}
			_, err := dec.Token()
			return m, err
		case '[':
			l := []any{}
			for dec.More() {
				v, err := decodeOrdered(dec)
				if err != nil {
					return nil, err
				}
				l = append(l, v)
			}
			_, err := dec.Token()
			return l, err
		}
	}
	return tok, nil
}

// yamlWriter writes values in PyYAML's default block style, as the
// Python yq's -y does (lists indented under their key unless
// --indentless-lists).
type yamlWriter struct {
	w          *bufio.Writer
	width      int
	indentless bool
	docs       int
	openEnded  bool // the last document was a plain scalar: "..." ends the stream
	column     int
}

func (y *yamlWriter) write(s string) {
	y.w.WriteString(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		y.column = len(s) - i - 1
	} else {
		y.column += len(s)
	}
}

func (y *yamlWriter) document(v any) {
	if y.docs > 0 {
		y.write("---")
		if isScalarYAML(v) {
			y.write(" ")
		} else {
			y.write("\n")
		}
	}
	y.docs++
	y.openEnded = false
	if isScalarYAML(v) {
		plain := y.scalar(v, 0)
		y.write("\n")
		y.openEnded = plain
		return
	}
	y.node(v, 0)
}

func (y *yamlWriter) end() {
	if y.openEnded {
		y.write("...\n")
	}
}

func isScalarYAML(v any) bool {
	switch t := v.(type) {
	case *orderedMap:
		return len(t.keys) == 0
	case []any:
		return len(t) == 0
	}
	return true
}

// node writes a non-empty collection starting at the current position
// (the start of a line, indented by indent), ending with a newline.
func (y *yamlWriter) node(v any, indent int) {
	pad := strings.Repeat(" ", indent)
	switch t := v.(type) {
	case *orderedMap:
		for i, k := range t.keys {
			if i > 0 {
				y.write(pad)
			}
			y.scalar(k, indent)
			y.write(":")
			y.value(t.vals[i], indent, false)
		}
	case []any:
		for i, item := range t {
			if i > 0 {
				y.write(pad)
			}
			y.write("-")
			y.value(item, indent, true)
		}
	}
}

// value writes what follows "key:" or "-".
func (y *yamlWriter) value(v any, indent int, inSeq bool) {
	if isScalarYAML(v) {
		y.write(" ")
		y.scalar(v, indent+2)
		y.write("\n")
		return
	}
	switch v.(type) {
	case *orderedMap:
		if inSeq {
			y.write(" ")
			y.node(v, indent+2)
			return
		}
		y.write("\n" + strings.Repeat(" ", indent+2))
		y.node(v, indent+2)
	case []any:
		if inSeq {
			y.write(" ")
			y.node(v, indent+2)
			return
		}
		in := indent + 2
		if y.indentless {
			in = indent
		}
		y.write("\n" + strings.Repeat(" ", in))
		y.node(v, in)
	}
}

var (
	yamlBool      = regexp.MustCompile(`^(?:yes|Yes|YES|no|No|NO|true|True|TRUE|false|False|FALSE|on|On|ON|off|Off|OFF)$`)
	yamlNull      = regexp.MustCompile(`^(?:~|null|Null|NULL)$`)
	yamlInt       = regexp.MustCompile(`^(?:[-+]?0b[0-1_]+|[-+]?0[0-7_]+|[-+]?(?:0|[1-9][0-9_]*)|[-+]?0x[0-9a-fA-F_]+|[-+]?[1-9][0-9_]*(?::[0-5]?[0-9])+)$`)
	yamlFloat     = regexp.MustCompile(`^(?:[-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+][0-9]+)?|\.[0-9_]+(?:[eE][-+][0-9]+)?|[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+\.[0-9_]*|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$`)
	yamlTimestamp = regexp.MustCompile(`^(?:[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]|[0-9][0-9][0-9][0-9]-[0-9][0-9]?-[0-9][0-9]?(?:[Tt]|[ \t]+)[0-9][0-9]?:[0-9][0-9]:[0-9][0-9](?:\.[0-9]*)?(?:[ \t]*(?:Z|[-+][0-9][0-9]?(?::[0-9][0-9])?))?)$`)
)

// scalar writes a scalar (or an empty collection) and reports whether it
// was written plain.
func (y *yamlWriter) scalar(v any, indent int) bool {
	switch t := v.(type) {
	case nil:
		y.write("null")
		return true
	case bool:
		y.write(strconv.FormatBool(t))
		return true
	case json.Number:
		y.write(t.String())
		return true
	case *orderedMap:
		y.write("{}")
		return false
	case []any:
		y.write("[]")
		return false
	case string:
		return y.str(t, indent)
	}
	y.write(fmt.Sprint(v))
	return true
}

// str writes a string plain when PyYAML would, else single-quoted, or
// double-quoted when it holds characters that need escapes.
func (y *yamlWriter) str(s string, indent int) bool {
	special := false
	for _, r := range s {
		if r < 0x20 && r != '\n' || r == 0x7f || r == 0xfeff {
			special = true
		}
	}
	if special {
		b, _ := json.Marshal(s)
		y.write(string(b))
		return false
	}
	if y.plainOK(s) {
		y.folded(s, indent, false)
		return true
	}
	y.write("'")
	y.folded(strings.ReplaceAll(s, "'", "''"), indent, true)
	y.write("'")
	return false
}

func (y *yamlWriter) plainOK(s string) bool {
	if s == "" || strings.ContainsAny(s, "\n") {
		return false
	}
	if yamlBool.MatchString(s) || yamlNull.MatchString(s) || yamlInt.MatchString(s) || yamlFloat.MatchString(s) ||
		yamlTimestamp.MatchString(s) || s == "=" || s == "<<" {
		return false
	}
	if s[0] == ' ' || s[len(s)-1] == ' ' {
		return false
	}
	if strings.ContainsAny(s[:1], "#,[]{}&*!|>'\"%@`") {
		return false
	}
	if strings.ContainsAny(s[:1], "?:-") && (len(s) == 1 || s[1] == ' ') {
		return false
	}
	if strings.Contains(s, ": ") || strings.Contains(s, " #") || strings.HasSuffix(s, ":") {
		return false
	}
	if strings.HasPrefix(s, "---") || strings.HasPrefix(s, "...") {
		return false
	}
	for _, r := range s {
		if r == '\t' {
			return false
		}
	}
	return true
}

// folded writes s, breaking at a single space once the line passes the
// width, and (quoted) turning each newline into a line break, as PyYAML's
// write_plain and write_single_quoted do.
func (y *yamlWriter) folded(s string, indent int, quoted bool) {
	pad := strings.Repeat(" ", indent)
	i := 0
	for i < len(s) {
		switch {
		case s[i] == ' ':
			j := i
			for j < len(s) && s[j] == ' ' {
				j++
			}
			if j == i+1 && y.column > y.width && i > 0 && j < len(s) {
				y.write("\n" + pad)
			} else {
				y.write(s[i:j])
			}
			i = j
		case s[i] == '\n' && quoted:
			j := i
			for j < len(s) && s[j] == '\n' {
				j++
			}
			// n newlines are written as n+1 line breaks (the first is folded).
			y.write(strings.Repeat("\n", j-i+1) + pad)
			i = j
		default:
			j := i
			for j < len(s) && s[j] != ' ' && !(s[j] == '\n' && quoted) {
				j++
			}
			y.write(s[i:j])
			i = j
		}
	}
}
