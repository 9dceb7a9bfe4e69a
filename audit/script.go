package audit

import (
	"path"
	"regexp"
	"sort"
	"strings"

	"github.com/wasmbox/wasmbox/internal/sh/syntax"
)

// IsSecretName reports whether a variable named name holds a secret for r:
// its upper-cased name matches [DefaultSecretNames] or a
// [WithSecretNames] glob, and is not one of the well-known harmless names
// (AWS_REGION, ...). Dashes count as underscores, so that a flag such as
// --api-key is recognised like API_KEY.
func (r *Redactor) IsSecretName(name string) bool {
	name = strings.ToUpper(strings.Trim(strings.ReplaceAll(name, "-", "_"), "_"))
	if name == "" || notSecretNames[name] {
		return false
	}
	for _, g := range r.names {
		if m, _ := path.Match(g, name); m {
			return true
		}
	}
	return false
}

// With returns a Redactor that also replaces the given literal values
// (values shorter than the minimum secret length are ignored, as for
// [WithLiterals]). r itself is unchanged; the patterns are shared. With no
// value to add it returns r.
func (r *Redactor) With(values ...string) *Redactor {
	var add []string
	seen := map[string]bool{}
	for _, v := range values {
		if len(v) < r.minLen || seen[v] || r.index.has(v) {
			continue
		}
		seen[v] = true
		add = append(add, v)
		for _, f := range encodedForms(v) {
			if !seen[f] && !r.index.has(f) {
				seen[f] = true
				add = append(add, f)
			}
		}
	}
	if len(add) == 0 {
		return r
	}
	c := *r
	c.literals = append(r.literals[:len(r.literals):len(r.literals)], add...)
	for _, l := range add {
		c.hold = max(c.hold, len(l)+1)
	}
	c.index = newLiteralIndex(add, r.index)
	return &c
}

// assignRE is the fallback for scripts that do not parse, and what finds
// NAME=value inside literal text (arguments such as `env TOKEN=x`,
// `--password=x`, `echo API_KEY=x >> .env`, here-documents). Group 1 is
// the name, group 2 the value.
var assignRE = regexp.MustCompile(`(?:^|[^A-Za-z0-9_$])-{0,2}([A-Za-z_][A-Za-z0-9_-]*)(?:\[[^\]\n]*\])?\+?=("(?:[^"\\]|\\.)*"?|'[^']*'?|[^\s;&|<>()'"]*)`)

// RedactScript returns script (bash) with the values a script assigns to
// secret-named variables (see [Redactor.IsSecretName]) replaced, and the
// literal values it found. It parses the script and replaces the literal
// parts of
//
//   - assignments: `MYPASSWORD=x cmd`, `TOKEN="x"`, `export API_KEY=x`,
//     `local`/`declare`/`readonly`, `+=`, arrays `KEYS=(a b)`;
//   - NAME=value and --name=value in the literal text of arguments and
//     here-documents: `env TOKEN=x cmd`, `curl --password=x`,
//     `echo API_KEY=x >> .env`.
//
// Expansions in a value (`TOKEN=$(cat f)`) stay: they are not the secret.
// A script that does not parse gets the conservative regular expression
// over NAME=value instead. The values returned are those fully literal
// (quotes removed), for redacting elsewhere with [Redactor.With].
func (r *Redactor) RedactScript(script string) (string, []string) {
	if !strings.Contains(script, "=") {
		return script, nil // every form above has one
	}
	f, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(script), "")
	if err != nil {
		sp, vals := r.assignSpans(script, 0)
		return r.replaceSpans(script, sp), vals
	}
	var sp []span
	var vals []string
	value := func(w *syntax.Word) {
		if w == nil {
			return
		}
		for _, p := range w.Parts {
			sp = append(sp, literalSpans(p)...)
		}
		if v, ok := wordLiteral(w); ok {
			vals = append(vals, v)
		}
	}
	// text looks for NAME=value in the literal parts of a word; a part
	// ending in a secret NAME= makes the rest of the word its value.
	text := func(w *syntax.Word) {
		if w == nil {
			return
		}
		for i, p := range w.Parts {
			for _, l := range literalParts(p) {
				s, e := int(l.Pos().Offset()), int(l.End().Offset())
				if q, ok := l.(*syntax.SglQuoted); ok {
					e = int(q.Right.Offset()) + 1
				}
				if s < 0 || e > len(script) || s >= e {
					continue
				}
				seg := script[s:e]
				if !strings.Contains(seg, "=") {
					continue
				}
				for _, m := range assignRE.FindAllStringSubmatchIndex(seg, -1) {
					if !r.IsSecretName(seg[m[2]:m[3]]) {
						continue
					}
					if m[4] < m[5] {
						sp = append(sp, span{s + m[4], s + m[5]})
						vals = append(vals, unquote(seg[m[4]:m[5]]))
					} else if m[5] == len(seg) && i+1 < len(w.Parts) {
						value(&syntax.Word{Parts: w.Parts[i+1:]})
					}
				}
			}
		}
	}
	syntax.Walk(f, func(n syntax.Node) bool {
		switch n := n.(type) {
		case *syntax.Assign:
			if n.Naked || n.Name == nil || !r.IsSecretName(n.Name.Value) {
				return true
			}
			value(n.Value)
			if n.Array != nil {
				for _, el := range n.Array.Elems {
					value(el.Value)
				}
			}
		case *syntax.CallExpr:
			for _, w := range n.Args {
				text(w)
			}
		case *syntax.Redirect:
			text(n.Hdoc)
		}
		return true
	})
	return r.replaceSpans(script, sp), vals
}

// assignSpans finds NAME=value with a secret NAME in s (which starts at
// offset base of the text the spans are for).
func (r *Redactor) assignSpans(s string, base int) ([]span, []string) {
	var sp []span
	var vals []string
	for _, m := range assignRE.FindAllStringSubmatchIndex(s, -1) {
		if m[4] == m[5] || !r.IsSecretName(s[m[2]:m[3]]) {
			continue
		}
		sp = append(sp, span{base + m[4], base + m[5]})
		vals = append(vals, unquote(s[m[4]:m[5]]))
	}
	return sp, vals
}

// unquote removes the quotes around a value found by assignRE.
func unquote(v string) string {
	if len(v) > 0 && (v[0] == '"' || v[0] == '\'') {
		return strings.TrimSuffix(v[1:], v[:1])
	}
	return unescape(v)
}

// replaceSpans replaces the (possibly overlapping or touching, unsorted)
// spans of s, one marker for each run of them.
func (r *Redactor) replaceSpans(s string, sp []span) string {
	if len(sp) == 0 {
		return s
	}
	sort.Slice(sp, func(i, j int) bool { return sp[i].start < sp[j].start })
	var b strings.Builder
	prev, open := 0, -1 // open: end of the run being replaced
	for _, x := range sp {
		if x.start >= x.end || x.start < 0 || x.end > len(s) {
			continue
		}
		if open >= 0 && x.start <= open {
			open = max(open, x.end)
			continue
		}
		if open >= 0 {
			prev = open
		}
		b.WriteString(s[prev:x.start])
		b.WriteString(r.repl)
		open = x.end
	}
	if open >= 0 {
		prev = open
	}
	b.WriteString(s[prev:])
	return b.String()
}

// literalParts returns the literal pieces of a word part: itself for a
// literal or single-quoted string, the literals inside a double-quoted
// string.
func literalParts(p syntax.WordPart) []syntax.Node {
	switch p := p.(type) {
	case *syntax.Lit:
		return []syntax.Node{p}
	case *syntax.SglQuoted:
		return []syntax.Node{p}
	case *syntax.DblQuoted:
		var out []syntax.Node
		for _, q := range p.Parts {
			if l, ok := q.(*syntax.Lit); ok {
				out = append(out, l)
			}
		}
		return out
	}
	return nil
}

// literalSpans returns what to replace of a word part: all of a literal,
// a single-quoted string or a double-quoted string without expansions,
// the literal pieces of one with expansions.
func literalSpans(p syntax.WordPart) []span {
	if q, ok := p.(*syntax.DblQuoted); ok && !q.Dollar {
		whole := true
		for _, x := range q.Parts {
			if _, ok := x.(*syntax.Lit); !ok {
				whole = false
			}
		}
		if whole {
			return []span{{int(q.Left.Offset()), int(q.Right.Offset()) + 1}}
		}
	}
	var out []span
	for _, n := range literalParts(p) {
		s, e := int(n.Pos().Offset()), int(n.End().Offset())
		if q, ok := n.(*syntax.SglQuoted); ok {
			e = int(q.Right.Offset()) + 1
		}
		if e > s {
			out = append(out, span{s, e})
		}
	}
	return out
}

// wordLiteral returns the value of a word made only of literal text and
// quotes.
func wordLiteral(w *syntax.Word) (string, bool) {
	var b strings.Builder
	for _, p := range w.Parts {
		switch p := p.(type) {
		case *syntax.Lit:
			b.WriteString(unescape(p.Value))
		case *syntax.SglQuoted:
			if p.Dollar {
				return "", false
			}
			b.WriteString(p.Value)
		case *syntax.DblQuoted:
			for _, q := range p.Parts {
				l, ok := q.(*syntax.Lit)
				if !ok {
					return "", false
				}
				b.WriteString(l.Value)
			}
		default:
			return "", false
		}
	}
	return b.String(), b.Len() > 0
}

// unescape removes the backslashes of an unquoted literal.
func unescape(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) {
			i++
			if s[i] == '\n' {
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
