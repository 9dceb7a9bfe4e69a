package audit

import (
	"bytes"
	"regexp"
	"strings"
	"testing"
)

const (
	ghToken   = "ghp_abcdefghijklmnopqrstuvwxyz0123456789"
	antKey    = "sk-ant-api03-AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"
	oaKey     = "sk-proj-BBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBB"
	awsID     = "AKIAIOSFODNN7EXAMPLE"
	awsSecret = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
	pemKey    = "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAx\nabcdefg==\n-----END RSA PRIVATE KEY-----"
)

func testRedactor(opts ...RedactorOption) *Redactor {
	env := []string{
		"HOME=/home/u", "PATH=/usr/bin", "MY_API_TOKEN=tok-1234567", "DB_PASSWORD=hunter2hunter2",
		"AWS_REGION=us-east-1", "SHORT_TOKEN=abc", "SERVICE_KEY=svc-key-value",
	}
	return NewRedactor(append([]RedactorOption{WithEnviron(env)}, opts...)...)
}

func TestRedact(t *testing.T) {
	r := testRedactor(WithLiterals("literal-secret"), WithPatterns(regexp.MustCompile(`acme_[0-9a-f]{8}`)))
	tests := []struct{ in, want string }{
		{"nothing here", "nothing here"},
		{"token tok-1234567 end", "token [REDACTED] end"},
		{"pw=hunter2hunter2", "pw=[REDACTED]"},
		{"key svc-key-value", "key [REDACTED]"},
		{"region us-east-1", "region us-east-1"},
		{"abc is short", "abc is short"},
		{"home /home/u", "home /home/u"},
		{"x literal-secret y", "x [REDACTED] y"},
		{"id acme_deadbeef.", "id [REDACTED]."},
		{"gh " + ghToken + " ok", "gh [REDACTED] ok"},
		{"pat github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz", "pat [REDACTED]"},
		{"key=" + antKey, "key=[REDACTED]"},
		{"OPENAI_API_KEY=" + oaKey, "OPENAI_API_KEY=[REDACTED]"},
		{"id " + awsID + " ok", "id [REDACTED] ok"},
		{"aws_secret_access_key = " + awsSecret, "aws_secret_access_key = [REDACTED]"},
		{"AWS_SECRET_ACCESS_KEY=\"" + awsSecret + "\"", "AWS_SECRET_ACCESS_KEY=\"[REDACTED]\""},
		{"Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.payload.sig", "Authorization: Bearer [REDACTED]"},
		{"authorization: token abcdef123456", "authorization: token [REDACTED]"},
		{"curl -H 'bearer abcdefgh12345678'", "curl -H 'bearer [REDACTED]'"},
		{"the bearer of bad news", "the bearer of bad news"},
		{"a\n" + pemKey + "\nb", "a\n[REDACTED]\nb"},
		{"cut: -----BEGIN PRIVATE KEY-----\nMIIabc", "cut: [REDACTED]"},
		{"-----BEGIN PUBLIC KEY-----\nMIIabc\n-----END PUBLIC KEY-----", "-----BEGIN PUBLIC KEY-----\nMIIabc\n-----END PUBLIC KEY-----"},
	}
	for _, tc := range tests {
		if got := r.Redact(tc.in); got != tc.want {
			t.Errorf("Redact(%q)\n got %q\nwant %q", tc.in, got, tc.want)
		}
	}
}

func TestRedactOptions(t *testing.T) {
	r := NewRedactor(WithEnviron([]string{"CUSTOM_THING=value-1234", "X=y"}), WithSecretNames("CUSTOM_*"), WithReplacement("***"), WithMinSecretLen(1))
	if got := r.Redact("a value-1234 b"); got != "a *** b" {
		t.Fatalf("got %q", got)
	}
}

// streamed writes in through a Writer in chunks of size n.
func streamed(r *Redactor, in string, n int) string {
	var out bytes.Buffer
	w := r.NewWriter(&out)
	for i := 0; i < len(in); i += n {
		w.Write([]byte(in[i:min(i+n, len(in))]))
	}
	w.Close()
	return out.String()
}

func TestWriterSplitSecrets(t *testing.T) {
	r := testRedactor()
	filler := strings.Repeat("lorem ipsum dolor ", 700) // > 2 hold windows
	in := filler + "A" + ghToken + " B tok-1234567 C Authorization: Bearer abcdefgh.ijkl D " + filler + pemKey + " E " + antKey + filler
	want := r.Redact(in)
	if strings.Contains(want, "ghp_") || strings.Contains(want, "tok-1234567") || strings.Contains(want, "MIIE") {
		t.Fatal("reference redaction leaks")
	}
	for _, n := range []int{1, 2, 3, 7, 64, 1000, 4096, 5000, 8191, len(in)} {
		if got := streamed(r, in, n); got != want {
			t.Errorf("chunk %d: streamed output differs (len %d vs %d)", n, len(got), len(want))
		}
	}
	// Every split point of a secret across exactly two writes.
	secret := "x tok-1234567 y"
	for i := 0; i <= len(secret); i++ {
		var out bytes.Buffer
		w := r.NewWriter(&out)
		w.Write([]byte(secret[:i]))
		w.Write([]byte(secret[i:]))
		w.Flush()
		if out.String() != "x [REDACTED] y" {
			t.Errorf("split at %d: %q", i, out.String())
		}
	}
}

func TestWriterLongUnterminatedPEM(t *testing.T) {
	r := testRedactor()
	in := "before\n-----BEGIN PRIVATE KEY-----\n" + strings.Repeat("QUFBQUFB", 20000) + "\n-----END PRIVATE KEY-----\nafter tok-1234567\n"
	got := streamed(r, in, 1000)
	if strings.Contains(got, "QUFB") || strings.Contains(got, "tok-1234567") {
		t.Fatalf("leak in %q", got[:min(200, len(got))])
	}
	if !strings.HasPrefix(got, "before\n[REDACTED]") || !strings.HasSuffix(got, "after [REDACTED]\n") {
		t.Fatalf("got %q ... %q", got[:min(60, len(got))], got[max(0, len(got)-60):])
	}
}

func TestWriterPassesPlainTextUnchanged(t *testing.T) {
	r := testRedactor()
	in := strings.Repeat("0123456789abcdef\n", 5000)
	if got := streamed(r, in, 333); got != in {
		t.Fatal("plain text changed")
	}
}

func BenchmarkWriter(b *testing.B) {
	r := testRedactor()
	chunk := []byte(strings.Repeat("some ordinary build output line 1234567890\n", 800))
	b.SetBytes(int64(len(chunk)))
	var sink bytes.Buffer
	w := r.NewWriter(&sink)
	for b.Loop() {
		sink.Reset()
		w.Write(chunk)
	}
}
