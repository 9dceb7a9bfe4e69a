package audit

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"slices"
	"strings"
	"testing"
)

func TestRedactScript(t *testing.T) {
	r := NewRedactor(WithEnviron(nil))
	tests := []struct {
		in, want string
		vals     []string
	}{
		{"MYPASSWORD=hunter2hunter2 printenv MYPASSWORD", "MYPASSWORD=[REDACTED] printenv MYPASSWORD", []string{"hunter2hunter2"}},
		{"export API_KEY=abc123xyz; run", "export API_KEY=[REDACTED]; run", []string{"abc123xyz"}},
		{`TOKEN="tok en value"; echo "$TOKEN"`, `TOKEN=[REDACTED]; echo "$TOKEN"`, []string{"tok en value"}},
		{`f() { local db_password='pw-123456'; }`, `f() { local db_password=[REDACTED]; }`, []string{"pw-123456"}},
		{`declare -x GH_TOKEN=ghtok-1 SAFE=1`, `declare -x GH_TOKEN=[REDACTED] SAFE=1`, []string{"ghtok-1"}},
		{`PASSWORD+=more12345`, `PASSWORD+=[REDACTED]`, []string{"more12345"}},
		{`TOKEN=a"b"'c'`, `TOKEN=[REDACTED]`, []string{"abc"}},
		{`API_KEYS=(aaaaaa bbbbbb)`, `API_KEYS=([REDACTED] [REDACTED])`, []string{"aaaaaa", "bbbbbb"}},
		{`TOKEN="Bearer $X"`, `TOKEN="[REDACTED]$X"`, nil},
		{`TOKEN=$(cat /run/secrets/t)`, `TOKEN=$(cat /run/secrets/t)`, nil},
		{`env GITHUB_TOKEN=ghtok-123456 gh auth status`, `env GITHUB_TOKEN=[REDACTED] gh auth status`, []string{"ghtok-123456"}},
		{`env GITHUB_TOKEN="ghtok 123456" gh`, `env GITHUB_TOKEN=[REDACTED] gh`, []string{"ghtok 123456"}},
		{`curl --password=hunter22 --user=bob x`, `curl --password=[REDACTED] --user=bob x`, []string{"hunter22"}},
		{`echo "DB_PASSWORD=s3cr3tpw" >> .env`, `echo "DB_PASSWORD=[REDACTED]" >> .env`, []string{"s3cr3tpw"}},
		{"cat > .env <<EOF\nSTRIPE_SECRET=sk_live_abcdef\nNAME=x\nEOF\n", "cat > .env <<EOF\nSTRIPE_SECRET=[REDACTED]\nNAME=x\nEOF\n", []string{"sk_live_abcdef"}},
		{`PATH=/x:$PATH; NAME=bob; AWS_REGION=us-east-1 GIT_AUTHOR_NAME=me cmd a=b`, `PATH=/x:$PATH; NAME=bob; AWS_REGION=us-east-1 GIT_AUTHOR_NAME=me cmd a=b`, nil},
		{`echo no assignment`, `echo no assignment`, nil},
		// Does not parse: the regular expression.
		{`PASSWORD=hunter2hunter2 echo "unterminated`, `PASSWORD=[REDACTED] echo "unterminated`, []string{"hunter2hunter2"}},
		{`if; export SECRET_X='a b' fi (`, `if; export SECRET_X=[REDACTED] fi (`, []string{"a b"}},
	}
	for _, tc := range tests {
		got, vals := r.RedactScript(tc.in)
		if got != tc.want || !slices.Equal(vals, tc.vals) {
			t.Errorf("RedactScript(%q)\n got %q %q\nwant %q %q", tc.in, got, vals, tc.want, tc.vals)
		}
	}
}

func TestIsSecretName(t *testing.T) {
	r := NewRedactor(WithEnviron(nil), WithSecretNames("ACME_*"))
	for _, n := range []string{"MYPASSWORD", "db_passwd", "API_KEY", "KEY", "GITHUB_TOKEN", "client_secret", "AWS_SECRET_ACCESS_KEY",
		"GOOGLE_APPLICATION_CREDENTIALS", "BASIC_AUTH", "OAUTH_CLIENT_SECRET", "SMTP_PASS", "api-key", "ACME_THING"} {
		if !r.IsSecretName(n) {
			t.Errorf("%s is not secret", n)
		}
	}
	for _, n := range []string{"PATH", "HOME", "PWD", "OLDPWD", "NAME", "AWS_REGION", "GIT_AUTHOR_NAME", "MONKEY", "USER", ""} {
		if r.IsSecretName(n) {
			t.Errorf("%s is secret", n)
		}
	}
}

// TestLogRedactsScriptAssignments: a value the script assigns to a
// secret-named variable is not in the log, neither in the script nor in
// any other field of the entry; nor are the entry's Secrets.
func TestLogRedactsScriptAssignments(t *testing.T) {
	var buf bytes.Buffer
	l := New(&buf, WithRedactor(NewRedactor(WithEnviron(nil))))
	ctx := context.Background()
	if err := l.Log(ctx, Event{Kind: KindRun, Script: "MYPASSWORD=hunter2hunter2 printenv MYPASSWORD",
		Argv: []string{"printenv", "hunter2hunter2"}, Reason: "saw hunter2hunter2",
		Attrs: []slog.Attr{slog.String("stdout", "hunter2hunter2\n")}}); err != nil {
		t.Fatal(err)
	}
	if err := l.Log(ctx, Event{Kind: KindExec, Argv: []string{"curl", "-u", "bob:embedder-pw-1"}, Secrets: []string{"embedder-pw-1", "x"}}); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, s := range []string{"hunter2hunter2", "embedder-pw-1"} {
		if strings.Contains(out, s) {
			t.Errorf("%q in the log:\n%s", s, out)
		}
	}
	for _, s := range []string{`"script":"MYPASSWORD=[REDACTED] printenv MYPASSWORD"`, `"argv":["printenv","[REDACTED]"]`,
		`"stdout":"[REDACTED]\n"`, `"argv":["curl","-u","bob:[REDACTED]"]`} {
		if !strings.Contains(out, s) {
			t.Errorf("log lacks %s:\n%s", s, out)
		}
	}
	if err := Verify(strings.NewReader(out)); err != nil {
		t.Fatal(err)
	}
}

func TestRedactorWith(t *testing.T) {
	r := NewRedactor(WithEnviron(nil))
	r2 := r.With("abc", "longer-secret")
	if r2.Redact("abc longer-secret") != "abc [REDACTED]" || r.Redact("longer-secret") != "longer-secret" {
		t.Fatalf("With: %q %q", r2.Redact("abc longer-secret"), r.Redact("longer-secret"))
	}
	if r.With() != r || r.With("x") != r {
		t.Fatal("With without a usable value should return r")
	}
}

// BenchmarkLogRun is the cost of one run entry, whose script is parsed for
// assignments to secret-named variables.
func BenchmarkLogRun(b *testing.B) {
	for _, script := range []string{
		"ls -la /home/user | head -n 5",
		"cd /work && X=1 make test 2>&1 | tail -n 20; export API_KEY=abcdef123456; curl -H \"x: $API_KEY\" https://example.com",
	} {
		b.Run(strings.Fields(script)[0], func(b *testing.B) {
			l := New(io.Discard, WithRedactor(NewRedactor()))
			ctx := context.Background()
			for b.Loop() {
				l.Log(ctx, Event{Kind: KindRun, Script: script, Session: "s", JobID: "j"})
			}
		})
	}
}
