package audit

import (
	"bytes"
	"io"
	"os"
	"path"
	"regexp"
	"sort"
	"strings"
	"sync"
)

// DefaultSecretNames are the environment variable name patterns (path.Match
// globs, matched against the upper-cased name) whose values a [Redactor]
// treats as secrets.
var DefaultSecretNames = []string{
	"*TOKEN*", "*SECRET*", "*_KEY", "*_KEY_*", "*KEY_ID", "*APIKEY*", "*API_KEY*",
	"*PASSWORD*", "*PASSWD*", "*PASSPHRASE*", "*CREDENTIAL*", "*_PAT", "*PRIVATE*",
	"AWS_*", "DATABASE_URL", "*_DSN",
	"KEY", "PASS", "*_PASS", "*_PWD", "*_CREDS", "*AUTH", "*AUTH_*",
}

// notSecretNames are matched by DefaultSecretNames but hold no secret.
var notSecretNames = map[string]bool{
	"AWS_REGION": true, "AWS_DEFAULT_REGION": true, "AWS_PROFILE": true,
	"AWS_DEFAULT_OUTPUT": true, "AWS_PAGER": true, "AWS_SDK_LOAD_CONFIG": true,
}

// DefaultPatterns returns the secret shapes a [Redactor] recognises in any
// text. A pattern with a group named "secret" has only that group replaced
// (the context, such as "Authorization: Bearer ", stays); otherwise the
// whole match is replaced. Every pattern has a bounded length except the PEM
// block, which the streaming [Writer] handles specially. They are compiled
// on first use: the bounded repetitions make 4.5 ms of work, which every
// wasmbox process paid at start when this was a package variable.
func DefaultPatterns() []*regexp.Regexp { return defaultPatterns() }

var defaultPatterns = sync.OnceValue(func() []*regexp.Regexp {
	return []*regexp.Regexp{
		// PEM private keys; an unterminated block is redacted to the end.
		regexp.MustCompile(`(?s)-----BEGIN [A-Z0-9 ]*PRIVATE KEY( BLOCK)?-----(?:.*?-----END [A-Z0-9 ]*PRIVATE KEY( BLOCK)?-----|.*$)`),
		// AWS access key ids.
		regexp.MustCompile(`\b(?:AKIA|ASIA)[0-9A-Z]{16}\b`),
		// AWS secret access keys next to their name.
		regexp.MustCompile(`(?i)aws_?secret(?:_?access)?_?key["']?\s*[:=]\s*["']?(?P<secret>[A-Za-z0-9/+=]{40})`),
		// GitHub tokens.
		regexp.MustCompile(`gh[pousr]_[A-Za-z0-9]{36,255}\b`),
		regexp.MustCompile(`github_pat_[A-Za-z0-9_]{22,255}\b`),
		// Anthropic, then OpenAI keys (sk-..., sk-proj-...).
		regexp.MustCompile(`sk-ant-[A-Za-z0-9_\-]{20,300}`),
		regexp.MustCompile(`\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_\-]{20,300}`),
		// Authorization headers and bearer tokens.
		regexp.MustCompile(`(?i)\bauthorization\s*:\s*(?:basic|token|bearer)\s+(?P<secret>[A-Za-z0-9\-._~+/]{4,1000}=*)`),
		regexp.MustCompile(`(?i)\bbearer\s+(?P<secret>[A-Za-z0-9\-._~+/]{8,1000}=*)`),
	}
})

// Replacement is what a secret is replaced with by default.
const Replacement = "[REDACTED]"

// RedactorOption configures a [Redactor].
type RedactorOption func(*redactorConfig)

type redactorConfig struct {
	environ     []string
	envSet      bool
	names       []string
	literals    []string
	patterns    []*regexp.Regexp
	replacement string
	minLen      int
}

// WithEnviron sets the environment ("NAME=value" entries) whose secret
// variables are redacted; the default is os.Environ() at construction.
func WithEnviron(environ []string) RedactorOption {
	return func(c *redactorConfig) { c.environ, c.envSet = environ, true }
}

// WithSecretNames adds name globs to [DefaultSecretNames].
func WithSecretNames(globs ...string) RedactorOption {
	return func(c *redactorConfig) { c.names = append(c.names, globs...) }
}

// WithLiterals adds literal secret values.
func WithLiterals(values ...string) RedactorOption {
	return func(c *redactorConfig) { c.literals = append(c.literals, values...) }
}

// WithPatterns adds patterns to [DefaultPatterns]. A pattern should match a
// bounded length (at most 4 KiB) for the streaming [Writer] to be exact.
func WithPatterns(res ...*regexp.Regexp) RedactorOption {
	return func(c *redactorConfig) { c.patterns = append(c.patterns, res...) }
}

// WithReplacement replaces secrets with s instead of [Replacement].
func WithReplacement(s string) RedactorOption {
	return func(c *redactorConfig) { c.replacement = s }
}

// WithMinSecretLen ignores environment and literal values shorter than n
// bytes (default 6), so that "1" or "true" are never redacted everywhere.
func WithMinSecretLen(n int) RedactorOption {
	return func(c *redactorConfig) { c.minLen = n }
}

// Redactor replaces secrets in text: the values of secret host environment
// variables, configured literal values, and well-known secret shapes (AWS
// keys, GitHub, Anthropic and OpenAI tokens, bearer tokens, PEM private
// keys). It is safe for concurrent use. The zero value is not usable; call
// [NewRedactor].
//
// A value (of a variable, a literal, or one given to [Redactor.With]) is
// also replaced in its obvious encodings: base64 (standard and URL-safe,
// padded or not, and inside a larger base64 blob at any alignment), hex
// (lower and upper case) and URL encoding (QueryEscape's "+" and "%20"
// for a space, PathEscape, encodeURIComponent, upper- or lower-case hex
// digits). That is the limit: any other encoding or transformation of a
// secret goes through — gzip, rot13, reversal, base32, another base64
// line wrapping that cuts through it, percent-encoding of characters
// that need none, case changes, hex with separators ("de:ad" or "\xde"),
// a secret printed in pieces (a character at a time, or split by
// other output), or one cut by a chunk boundary of a stream whose writer
// is not a [Writer]. The [Writer] finds a secret split across its own
// writes. Redaction is a safety net against accidents, not a boundary
// against a script that means to leak a value it can read.
type Redactor struct {
	names    []string // upper-cased secret name globs
	minLen   int
	literals []string // the secrets and their encoded forms
	index    *literalIndex
	patterns []pattern
	repl     string
	hold     int
}

type pattern struct {
	re     *regexp.Regexp
	secret int // index of the "secret" group, or -1
	// triggers: the pattern can only match text that contains one of
	// these (lower-case) strings; nil means always run it.
	triggers [][]byte
}

// defaultTriggers lists, for each default pattern, literals that any
// match contains, so that the (slow) regular expressions only run on text
// that may match.
var defaultTriggers = [][]string{
	{"-----begin "},
	{"akia", "asia"},
	{"secret"},
	{"ghp_", "gho_", "ghu_", "ghs_", "ghr_"},
	{"github_pat_"},
	{"sk-ant-"},
	{"sk-"},
	{"authorization"},
	{"bearer"},
}

// NewRedactor returns a Redactor configured by opts.
func NewRedactor(opts ...RedactorOption) *Redactor {
	c := redactorConfig{replacement: Replacement, minLen: 6}
	for _, o := range opts {
		o(&c)
	}
	if !c.envSet {
		c.environ = os.Environ()
	}
	names := append(append([]string(nil), DefaultSecretNames...), c.names...)
	seen := map[string]bool{}
	var lits []string
	add := func(v string) {
		if len(v) >= c.minLen && !seen[v] {
			seen[v] = true
			lits = append(lits, v)
			for _, f := range encodedForms(v) {
				if !seen[f] {
					seen[f] = true
					lits = append(lits, f)
				}
			}
		}
	}
	for _, kv := range c.environ {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || v == "" {
			continue
		}
		k = strings.ToUpper(k)
		if notSecretNames[k] {
			continue
		}
		for _, g := range names {
			if m, _ := path.Match(strings.ToUpper(g), k); m {
				add(v)
				break
			}
		}
	}
	for _, v := range c.literals {
		add(v)
	}
	sort.SliceStable(lits, func(i, j int) bool { return len(lits[i]) > len(lits[j]) })
	r := &Redactor{literals: lits, index: newLiteralIndex(lits, nil), repl: c.replacement, hold: 4096 + 64, minLen: c.minLen}
	for _, g := range names {
		r.names = append(r.names, strings.ToUpper(g))
	}
	for _, l := range lits {
		r.hold = max(r.hold, len(l)+1)
	}
	for i, re := range append(append([]*regexp.Regexp(nil), DefaultPatterns()...), c.patterns...) {
		p := pattern{re: re, secret: re.SubexpIndex("secret")}
		if i < len(defaultTriggers) {
			for _, t := range defaultTriggers[i] {
				p.triggers = append(p.triggers, []byte(t))
			}
		}
		r.patterns = append(r.patterns, p)
	}
	return r
}

type span struct{ start, end int }

// spans returns the byte ranges of b to replace, sorted and merged. When
// whole is set, pattern matches are returned whole (not only their secret
// group), which is what the streaming writer needs to place its cut.
func (r *Redactor) spans(b []byte, whole bool) []span {
	var out []span
	out = r.index.find(b, out)
	var lower []byte
	for _, p := range r.patterns {
		if p.triggers != nil {
			if lower == nil {
				lower = bytes.ToLower(b)
			}
			hit := false
			for _, t := range p.triggers {
				if bytes.Contains(lower, t) {
					hit = true
					break
				}
			}
			if !hit {
				continue
			}
		}
		for _, m := range p.re.FindAllSubmatchIndex(b, -1) {
			s, e := m[0], m[1]
			if g := p.secret; g >= 0 && !whole && m[2*g] >= 0 {
				s, e = m[2*g], m[2*g+1]
			}
			if e > s {
				out = append(out, span{s, e})
			}
		}
	}
	if len(out) < 2 {
		return out
	}
	sort.Slice(out, func(i, j int) bool { return out[i].start < out[j].start })
	merged := out[:1]
	for _, s := range out[1:] {
		last := &merged[len(merged)-1]
		if s.start <= last.end {
			last.end = max(last.end, s.end)
		} else {
			merged = append(merged, s)
		}
	}
	return merged
}

// RedactBytes returns b with every secret replaced. It returns b itself
// when there is nothing to replace.
func (r *Redactor) RedactBytes(b []byte) []byte {
	sp := r.spans(b, false)
	if len(sp) == 0 {
		return b
	}
	out := make([]byte, 0, len(b))
	prev := 0
	for _, s := range sp {
		out = append(out, b[prev:s.start]...)
		out = append(out, r.repl...)
		prev = s.end
	}
	return append(out, b[prev:]...)
}

// Redact returns s with every secret replaced.
func (r *Redactor) Redact(s string) string {
	if s == "" {
		return s
	}
	return string(r.RedactBytes([]byte(s)))
}

// RedactAll redacts every element of ss into a new slice.
func (r *Redactor) RedactAll(ss []string) []string {
	if ss == nil {
		return nil
	}
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = r.Redact(s)
	}
	return out
}

// maxHeld bounds what a Writer keeps back waiting for the end of a secret
// (an unterminated PEM block). Beyond it the rest of the block is dropped.
const maxHeld = 64 << 10

var pemEnd = regexp.MustCompile(`-----END [A-Z0-9 ]*PRIVATE KEY( BLOCK)?-----`)

// Writer is a streaming redactor: what is written to it reaches the
// underlying writer with secrets replaced, even a secret split across two
// Write calls. To do so it keeps back the last few KiB (and an unterminated
// PEM block up to 64 KiB) until more data or Flush shows it is safe. Call
// Flush (or Close) at the end of the stream. It is safe for concurrent use.
type Writer struct {
	r        *Redactor
	w        io.Writer
	mu       sync.Mutex
	buf      []byte
	dropping bool // inside an over-long PEM block: discard until its end
	next     int  // scan again once the buffer is this long
	err      error
}

// NewWriter returns a Writer that redacts into w.
func (r *Redactor) NewWriter(w io.Writer) *Writer { return &Writer{r: r, w: w} }

// Write takes all of p (n is always len(p) unless the underlying writer
// failed earlier).
func (w *Writer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return 0, w.err
	}
	w.buf = append(w.buf, p...)
	w.err = w.drain(false)
	return len(p), w.err
}

// Flush writes out everything held back, redacted.
func (w *Writer) Flush() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return w.err
	}
	w.err = w.drain(true)
	return w.err
}

// Close flushes. It does not close the underlying writer.
func (w *Writer) Close() error { return w.Flush() }

func (w *Writer) drain(final bool) error {
	if w.dropping {
		loc := pemEnd.FindIndex(w.buf)
		if loc == nil {
			if final {
				w.buf, w.dropping = nil, false
				return nil
			}
			// Keep a tail in case the END marker is split.
			if keep := 64; len(w.buf) > keep {
				w.buf = append(w.buf[:0], w.buf[len(w.buf)-keep:]...)
			}
			return nil
		}
		w.buf = append(w.buf[:0], w.buf[loc[1]:]...)
		w.dropping = false
	}
	cut := len(w.buf)
	if !final {
		if len(w.buf) < max(2*w.r.hold, w.next) {
			return nil // amortise: scan only once enough has piled up
		}
		defer func() { w.next = len(w.buf) + w.r.hold }()
		cut -= w.r.hold
		if cut <= 0 {
			return nil
		}
		for _, s := range w.r.spans(w.buf, true) {
			if s.start < cut && s.end > cut {
				cut = s.start
				break
			}
		}
		if held := len(w.buf) - cut; held > maxHeld+w.r.hold {
			// A secret (an unterminated PEM block) longer than we are
			// willing to hold: redact everything and drop the rest of it.
			if _, err := w.w.Write(w.r.RedactBytes(w.buf)); err != nil {
				return err
			}
			w.buf = w.buf[:0]
			w.dropping = true
			return nil
		}
	}
	if cut <= 0 {
		return nil
	}
	if _, err := w.w.Write(w.r.RedactBytes(w.buf[:cut])); err != nil {
		return err
	}
	w.buf = append(w.buf[:0], w.buf[cut:]...)
	return nil
}
