package audit

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"
)

func fixedClock() func() time.Time {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	return func() time.Time { return t0 }
}

func writeLog(t *testing.T, n int) (*bytes.Buffer, *Logger) {
	t.Helper()
	var buf bytes.Buffer
	l := New(&buf, WithRedactor(testRedactor()), WithClock(fixedClock()))
	for i := range n {
		err := l.Log(context.Background(), Event{
			Kind: KindExec, JobID: fmt.Sprintf("job-%d", i), Session: "s1", Lane: "interactive", Slot: i % 2,
			Argv:  []string{"git", "commit", "-m", "token tok-1234567"},
			Start: time.Unix(100, 0), End: time.Unix(101, 0), Exit: 0,
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return &buf, l
}

func TestLogFormat(t *testing.T) {
	var buf bytes.Buffer
	l := New(&buf, WithRedactor(testRedactor()), WithClock(fixedClock()))
	ctx := context.Background()
	l.Log(ctx, Event{Kind: KindDecision, Session: "s1", Argv: []string{"git", "push"}, Allowed: Allowed(false), Reason: "subcommand \"push\" is not allowed"})
	l.Log(ctx, Event{Kind: KindRun, JobID: "j1", Session: "s1", Lane: "interactive", Slot: 0, Script: "echo $MY_API_TOKEN tok-1234567",
		Start: time.Unix(100, 0).UTC(), End: time.Unix(100, 250e6).UTC(), Exit: 124, Class: "TIMEOUT", Truncated: true,
		Attrs: []slog.Attr{slog.String("note", "pw hunter2hunter2")}})
	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	if len(lines) != 2 {
		t.Fatalf("%d lines", len(lines))
	}
	want0 := `{"time":"2026-01-02T03:04:05Z","level":"INFO","msg":"decision","seq":1,"prev":"` + Genesis + `","session":"s1","argv":["git","push"],"allowed":false,"reason":"subcommand \"push\" is not allowed","hash":"`
	if !strings.HasPrefix(lines[0], want0) {
		t.Errorf("line 1:\n got %s\nwant %s...", lines[0], want0)
	}
	want1 := `"msg":"run","seq":2,"prev":"` + l.headAt(t, lines[0]) + `","job_id":"j1","session":"s1","lane":"interactive","slot":0,"script":"echo $MY_API_TOKEN [REDACTED]","start":"1970-01-01T00:01:40Z","end":"1970-01-01T00:01:40.25Z","exit":124,"duration_ms":250,"class":"TIMEOUT","truncated":true,"note":"pw [REDACTED]","hash":"`
	if !strings.Contains(lines[1], want1) {
		t.Errorf("line 2:\n got %s\nwant ...%s", lines[1], want1)
	}
	if err := Verify(strings.NewReader(buf.String())); err != nil {
		t.Fatal(err)
	}
	if err := l.Log(ctx, Event{Kind: KindRun, Attrs: []slog.Attr{slog.Int("seq", 9)}}); err == nil {
		t.Fatal("reserved attribute accepted")
	}
}

// headAt extracts the hash of a line.
func (l *Logger) headAt(t *testing.T, line string) string {
	i := strings.LastIndex(line, `"hash":"`)
	return line[i+8 : len(line)-2]
}

func TestArgvRedacted(t *testing.T) {
	buf, _ := writeLog(t, 1)
	if strings.Contains(buf.String(), "tok-1234567") || !strings.Contains(buf.String(), `"argv":["git","commit","-m","token [REDACTED]"]`) {
		t.Fatalf("argv not redacted: %s", buf)
	}
}

func TestVerifyDetectsTampering(t *testing.T) {
	buf, l := writeLog(t, 5)
	orig := buf.String()
	if err := Verify(strings.NewReader(orig)); err != nil {
		t.Fatalf("intact log: %v", err)
	}
	head, err := VerifyFrom(strings.NewReader(orig), Head{})
	if err != nil || head != l.Head() || head.Seq != 5 {
		t.Fatalf("head %+v vs %+v: %v", head, l.Head(), err)
	}
	lines := strings.SplitAfter(orig, "\n")[:5]
	join := func(ls ...string) string { return strings.Join(ls, "") }
	tests := []struct {
		name string
		log  string
		line int
	}{
		{"edit a field", strings.Replace(orig, `"job-2"`, `"job-X"`, 1), 3},
		{"edit exit code", join(lines[0], strings.Replace(lines[1], `"exit":0`, `"exit":1`, 1), lines[2]), 2},
		{"delete a line", join(lines[0], lines[1], lines[3], lines[4]), 3},
		{"swap lines", join(lines[0], lines[2], lines[1], lines[3]), 2},
		{"duplicate a line", join(lines[0], lines[1], lines[1], lines[2]), 3},
		{"drop the first line", join(lines[1:]...), 1},
		{"garbage line", join(lines[0], "hello\n", lines[1]), 2},
		{"cut mid-line", orig[:len(orig)-10], 5},
	}
	for _, tc := range tests {
		err := Verify(strings.NewReader(tc.log))
		var ve *VerifyError
		if !errors.As(err, &ve) || !errors.Is(err, ErrTampered) || ve.Line != tc.line {
			t.Errorf("%s: got %v, want broken line %d", tc.name, err, tc.line)
		}
	}
	// Cutting whole lines off the end shows against a stored head.
	head, err = VerifyFrom(strings.NewReader(join(lines[:3]...)), Head{})
	if err != nil || head == l.Head() {
		t.Fatalf("truncated log: %+v %v", head, err)
	}
}

func TestContinueChain(t *testing.T) {
	buf, l := writeLog(t, 2)
	first := buf.String()
	var more bytes.Buffer
	l2 := New(&more, WithRedactor(testRedactor()), WithHead(l.Head()))
	l2.Log(context.Background(), Event{Kind: KindSession, Session: "s2"})
	if err := Verify(strings.NewReader(first + more.String())); err != nil {
		t.Fatal(err)
	}
	if _, err := VerifyFrom(strings.NewReader(more.String()), l.Head()); err != nil {
		t.Fatal(err)
	}
}

func TestConcurrentLogging(t *testing.T) {
	var buf bytes.Buffer
	l := New(&buf, WithRedactor(testRedactor()))
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 50 {
				l.Log(context.Background(), Event{Kind: KindExec, JobID: fmt.Sprint(g, "-", i), Argv: []string{"x"}})
			}
		}()
	}
	wg.Wait()
	if err := Verify(&buf); err != nil {
		t.Fatal(err)
	}
	if l.Head().Seq != 400 {
		t.Fatalf("seq %d", l.Head().Seq)
	}
}
