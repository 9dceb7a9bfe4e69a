package audit

import (
	"bytes"
	"encoding/base64"
	"strings"
	"testing"
)

// FuzzWriter checks that streaming redaction, whatever the chunking, gives
// exactly the one-shot redaction of the whole text (for texts with no PEM
// block longer than the writer holds back).
func FuzzWriter(f *testing.F) {
	for _, s := range []string{
		"", "plain", "tok-1234567", "x " + ghToken + " y", "Authorization: Bearer abcdefgh.ijk",
		"aws_secret_access_key=" + awsSecret, pemKey, "-----BEGIN PRIVATE KEY-----\nabc", antKey + oaKey,
		// Encoded secrets (encode.go), overlapping each other.
		base64.StdEncoding.EncodeToString([]byte("Basic u:tok-1234567tok-1234567")), "746f6b2d31323334353637746f6b",
		"p%40ss+w%2Frd", "dG9rLTEyMzQ1Njc=dG9rLTEyMzQ1Njc",
	} {
		f.Add(s, uint16(1), uint16(7))
	}
	r := testRedactor(WithLiterals("literal-secret", "p@ss w/rd"))
	f.Fuzz(func(t *testing.T, s string, a, b uint16) {
		in := strings.Repeat(s, 1+int(a%3)) + strings.Repeat("filler ", int(b%2000)) + s
		want := string(r.RedactBytes([]byte(in)))
		var out bytes.Buffer
		w := r.NewWriter(&out)
		step := 1 + int(a)%97
		for i := 0; i < len(in); {
			w.Write([]byte(in[i:min(i+step, len(in))]))
			i += step
			step = 1 + (step*31+int(b))%4099
		}
		w.Close()
		if out.String() != want {
			t.Fatalf("streamed %q\nwant     %q", out.String(), want)
		}
	})
}

// FuzzVerify: Verify never panics, and never accepts a changed line.
func FuzzVerify(f *testing.F) {
	f.Add([]byte("{}\n"), 0, byte('x'))
	f.Add([]byte("not json\n"), 3, byte('1'))
	f.Fuzz(func(t *testing.T, junk []byte, pos int, c byte) {
		Verify(bytes.NewReader(junk))
		var buf bytes.Buffer
		l := New(&buf, WithRedactor(testRedactor()))
		l.Log(t.Context(), Event{Kind: KindExec, Argv: []string{"git", string(junk)}})
		l.Log(t.Context(), Event{Kind: KindRun, Script: string(junk)})
		log := buf.Bytes()
		if err := Verify(bytes.NewReader(log)); err != nil {
			t.Fatalf("intact log rejected: %v", err)
		}
		if pos < 0 {
			pos = -pos
		}
		i := pos % len(log)
		if log[i] == c || log[i] == '\n' || c == '\n' {
			return
		}
		changed := append([]byte(nil), log...)
		changed[i] = c
		if Verify(bytes.NewReader(changed)) == nil {
			t.Fatalf("changed byte %d to %q and Verify accepted:\n%s", i, c, changed)
		}
	})
}

// FuzzRedactScript: RedactScript never panics, and no literal value it
// reports (of at least the minimum length) is left in the script it
// returns.
func FuzzRedactScript(f *testing.F) {
	for _, s := range []string{
		"MYPASSWORD=hunter2hunter2 printenv MYPASSWORD", `export API_KEY="a b c d e f"`, "TOKEN=a\"b\"'c' x",
		"cat <<EOF\nSECRET=abcdefgh\nEOF\n", `PASSWORD=x echo "unterminated`, `env T_TOKEN=$(x)abcdefg y`, "K=(a b) KEY[1]=zzzzzzzz",
	} {
		f.Add(s)
	}
	r := NewRedactor(WithEnviron(nil))
	f.Fuzz(func(t *testing.T, s string) {
		out, vals := r.RedactScript(s)
		for _, v := range vals {
			if len(v) >= 6 && strings.Contains(out, v) && !strings.Contains(s, v+v) && !strings.Contains(Replacement, v) {
				if strings.Count(out, v) >= strings.Count(s, v) {
					t.Fatalf("value %q left in %q (from %q)", v, out, s)
				}
			}
		}
	})
}
