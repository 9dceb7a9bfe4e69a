// Package golden reads and writes the golden test cases of the tools
// (tools/testdata/golden/CMD/CASE.txtar; the format is described in that
// folder's README): tools/goldengen regenerates their expectations from
// the GNU tools, and the tests of package wasm and of the tool packages run
// them.
package golden

import (
	"bytes"
	"fmt"
	"os"
	"path"
	"strings"

	"mvdan.cc/sh/v3/shell"
)

// Section is one "-- NAME --" section of a golden case.
type Section struct {
	Name string // "args", "stdin", "file: a.txt", "stdout", ...
	Data []byte
}

// Case is a parsed golden case file.
type Case struct {
	Comment  []byte // the lines before the first section
	Sections []Section
}

// noEOL marks a section whose content does not end in a newline.
const noEOL = " (noeol)"

// Parse parses the txtar-like golden format. A section's content is
// the lines up to the next marker line "-- NAME --"; its final newline is
// part of the content unless the marker carries the " (noeol)" suffix.
func Parse(data []byte) (*Case, error) {
	c := &Case{}
	var cur *Section
	var noeol bool
	finish := func() {
		if cur != nil && noeol {
			cur.Data = bytes.TrimSuffix(cur.Data, []byte("\n"))
		}
	}
	for len(data) > 0 {
		line := data
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			line, data = data[:i+1], data[i+1:]
		} else {
			data = nil
		}
		if name, ok := marker(line); ok {
			finish()
			noeol = strings.HasSuffix(name, noEOL)
			name = strings.TrimSuffix(name, noEOL)
			c.Sections = append(c.Sections, Section{Name: name})
			cur = &c.Sections[len(c.Sections)-1]
			continue
		}
		if cur == nil {
			c.Comment = append(c.Comment, line...)
		} else {
			cur.Data = append(cur.Data, line...)
		}
	}
	finish()
	seen := map[string]bool{}
	for _, s := range c.Sections {
		if seen[s.Name] {
			return nil, fmt.Errorf("duplicate section %q", s.Name)
		}
		seen[s.Name] = true
		switch k, p, _ := strings.Cut(s.Name, ": "); k {
		case "args", "stdin", "stdout", "stderr", "exit", "manual":
		case "file", "want":
			if p == "" || path.IsAbs(p) || strings.HasPrefix(path.Clean(p), "..") {
				return nil, fmt.Errorf("section %q: path must be relative and stay in the case directory", s.Name)
			}
		default:
			return nil, fmt.Errorf("unknown section %q", s.Name)
		}
	}
	if !seen["args"] {
		return nil, fmt.Errorf("no args section")
	}
	return c, nil
}

func marker(line []byte) (string, bool) {
	s := strings.TrimSuffix(string(line), "\n")
	if len(s) < 7 || !strings.HasPrefix(s, "-- ") || !strings.HasSuffix(s, " --") {
		return "", false
	}
	return s[3 : len(s)-3], true
}

// Get returns a section's content.
func (c *Case) Get(name string) ([]byte, bool) {
	for _, s := range c.Sections {
		if s.Name == name {
			return s.Data, true
		}
	}
	return nil, false
}

// Args splits the args section into words with shell quoting rules and no
// expansion (variables expand to nothing, no globbing).
func (c *Case) Args() ([]string, error) {
	a, _ := c.Get("args")
	return shell.Fields(strings.TrimRight(string(a), "\n"), func(string) string { return "" })
}

// Files returns the "file: PATH" sections in order.
func (c *Case) Files() []Section {
	return c.prefixed("file: ")
}

// Wants returns the "want: PATH" sections in order.
func (c *Case) Wants() []Section {
	return c.prefixed("want: ")
}

func (c *Case) prefixed(prefix string) []Section {
	var out []Section
	for _, s := range c.Sections {
		if p, ok := strings.CutPrefix(s.Name, prefix); ok {
			out = append(out, Section{Name: p, Data: s.Data})
		}
	}
	return out
}

// Format writes the case back in the golden format.
func (c *Case) Format() []byte {
	var b bytes.Buffer
	b.Write(c.Comment)
	for _, s := range c.Sections {
		name := s.Name
		if len(s.Data) > 0 && s.Data[len(s.Data)-1] != '\n' {
			name += noEOL
		}
		fmt.Fprintf(&b, "-- %s --\n", name)
		b.Write(s.Data)
		if name != s.Name {
			b.WriteByte('\n')
		}
	}
	return b.Bytes()
}

// WriteFiles creates the case's "file:" sections under dir; a name ending
// in "/" creates an (empty) directory.
func (c *Case) WriteFiles(dir string) error {
	for _, f := range c.Files() {
		p := dir + "/" + path.Clean(f.Name)
		if strings.HasSuffix(f.Name, "/") {
			if err := os.MkdirAll(p, 0o755); err != nil {
				return err
			}
			continue
		}
		if err := os.MkdirAll(path.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, f.Data, 0o644); err != nil {
			return err
		}
	}
	return nil
}
