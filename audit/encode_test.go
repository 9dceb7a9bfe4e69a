package audit

import (
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"net/url"
	"strings"
	"testing"
)

var encSecrets = []string{"tok-1234567", "hunter2hunter2", "svc-key-value", "p@ss w/rd+&=?~x", "sécret-ü-1", "abcdef"}

func encRedactor() *Redactor {
	return NewRedactor(WithEnviron([]string{"MY_API_TOKEN=tok-1234567", "DB_PASSWORD=hunter2hunter2", "SERVICE_KEY=svc-key-value"}),
		WithLiterals("p@ss w/rd+&=?~x", "sécret-ü-1", "abcdef"))
}

// Each secret, in each obvious encoding, inside other text, is replaced.
func TestRedactEncodings(t *testing.T) {
	r := encRedactor()
	for _, s := range encSecrets {
		b := []byte(s)
		q := url.QueryEscape(s)
		forms := map[string]string{
			"base64":             base64.StdEncoding.EncodeToString(b),
			"base64 raw":         base64.RawStdEncoding.EncodeToString(b),
			"base64url":          base64.URLEncoding.EncodeToString(b),
			"base64url raw":      base64.RawURLEncoding.EncodeToString(b),
			"base64 of s+\\n":    base64.StdEncoding.EncodeToString(append(b, '\n')),
			"hex":                hex.EncodeToString(b),
			"HEX":                strings.ToUpper(hex.EncodeToString(b)),
			"query":              q,
			"query %20":          strings.ReplaceAll(q, "+", "%20"),
			"path":               url.PathEscape(s),
			"encodeURIComponent": encodeURIComponent(s),
			"query lower hex":    lowerPercent(q),
		}
		for name, f := range forms {
			in := "x=" + f + "&y=1\n"
			got := r.Redact(in)
			if strings.Contains(got, f) || !strings.Contains(got, Replacement) {
				t.Errorf("%q as %s: Redact(%q) = %q", s, name, in, got)
			}
			if strings.Contains(got, s) {
				t.Errorf("%q as %s: the secret is in %q", s, name, got)
			}
		}
	}
}

// A secret inside a larger base64 blob, at every alignment, with any
// bytes around it: every character that encodes only the secret's bytes
// is replaced; at most the characters shared with its neighbours remain.
func TestRedactBase64InsideBlob(t *testing.T) {
	r := encRedactor()
	for _, s := range encSecrets {
		for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding, base64.RawStdEncoding} {
			for p := range 6 {
				for sfx := range 4 {
					prefix := strings.Repeat("\xa5", p)
					full := enc.EncodeToString([]byte(prefix + s + strings.Repeat("\x5a", sfx)))
					got := r.Redact(full)
					i := strings.Index(got, Replacement)
					if i < 0 {
						t.Errorf("%q at %d+%d: not redacted: %s", s, p, sfx, full)
						continue
					}
					a, b := i, len(full)-(len(got)-i-len(Replacement))
					if a > (8*p+5)/6 || b < 8*(p+len(s))/6 {
						t.Errorf("%q at %d+%d: %s redacted to %s: kept a character of the secret alone", s, p, sfx, full, got)
					}
				}
			}
		}
	}
}

// An encoded secret split across writes of the streaming Writer is
// replaced all the same.
func TestWriterSplitEncodedSecrets(t *testing.T) {
	r := encRedactor()
	for _, f := range []string{
		base64.StdEncoding.EncodeToString([]byte("Basic user:hunter2hunter2 x")),
		hex.EncodeToString([]byte("svc-key-value")),
		url.QueryEscape("p@ss w/rd+&=?~x"),
	} {
		in := strings.Repeat("ordinary output line\n", 300) + "v=" + f + "\n" + strings.Repeat("more\n", 100)
		for _, n := range []int{1, 3, 7, 64, 4096} {
			got := streamed(r, in, n)
			if got != r.Redact(in) || strings.Contains(got, f) {
				t.Errorf("%s in writes of %d: not redacted as a whole", f, n)
			}
		}
	}
}

// Encodings of short secrets (WithMinSecretLen(1)) that would match
// ordinary text are not redacted; ordinary text that merely contains base64
// or hex is left alone.
func TestRedactEncodingsNoFalsePositives(t *testing.T) {
	r := NewRedactor(WithEnviron(nil), WithLiterals("ab", "xyz", "a b"), WithMinSecretLen(1))
	in := "YWI= 6162 eHl6 78797a 78797A a%20b a+b 612062"
	if got := r.Redact(in); got != in {
		t.Fatalf("Redact(%q) = %q", in, got)
	}
	r = encRedactor()
	for _, in := range []string{
		base64.StdEncoding.EncodeToString([]byte("an ordinary blob of bytes with no secret in it at all")),
		hex.EncodeToString([]byte("another ordinary line")),
		"https://example.com/?q=a%20b&x=%2F",
	} {
		if got := r.Redact(in); got != in {
			t.Errorf("Redact(%q) = %q", in, got)
		}
	}
}

func TestEncodedForms(t *testing.T) {
	// "hunter" at offset 0 encodes fully ("aHVudGVy"); at offsets 1 and 2
	// the characters of its bytes alone.
	got := fmt.Sprint(encodedForms("hunter"))
	for _, want := range []string{"aHVudGVy", "68756e746572", "68756E746572"} {
		if !strings.Contains(got, want) {
			t.Errorf("encodedForms(hunter) = %s, want %s in it", got, want)
		}
	}
	for k := 1; k < 3; k++ {
		e := base64.RawStdEncoding.EncodeToString(append(make([]byte, k), "hunter"...))
		core := e[(8*k+5)/6 : 8*(k+6)/6]
		x := base64.RawStdEncoding.EncodeToString(append([]byte("\xff\xfe"[:k]), "hunter"...))
		if !strings.Contains(x, core) || !strings.Contains(got, core) {
			t.Errorf("alignment %d: core %q of %q not in %s or not shared by %q", k, core, e, got, x)
		}
	}
}
