package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wasmbox/wasmbox/audit"
)

func TestAuditVerify(t *testing.T) {
	var log bytes.Buffer
	l := audit.New(&log, audit.WithRedactor(audit.NewRedactor(audit.WithEnviron(nil))))
	for _, argv := range [][]string{{"git", "status"}, {"git", "log"}, {"ls"}} {
		l.Log(context.Background(), audit.Event{Kind: audit.KindExec, Argv: argv})
	}
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	os.WriteFile(path, log.Bytes(), 0o644)
	head := formatHead(l.Head())

	run := func(stdin string, args ...string) (int, string, string) {
		var out, errOut bytes.Buffer
		code := doMain(append([]string{"audit-verify"}, args...), strings.NewReader(stdin), &out, &errOut)
		return code, out.String(), errOut.String()
	}
	if code, out, _ := run("", path); code != 0 || out != "ok: 3 entries, head "+head+"\n" {
		t.Fatalf("intact: %d %q", code, out)
	}
	if code, out, _ := run(log.String(), "-", "--expect-head", head); code != 0 || !strings.HasPrefix(out, "ok: 3 entries") {
		t.Fatalf("stdin: %d %q", code, out)
	}
	tampered := strings.Replace(log.String(), `"log"`, `"push"`, 1)
	if code, _, errOut := run(tampered); code != 1 || errOut != "wasmbox: stdin: tampered: line 2: hash does not match the content\n" {
		t.Fatalf("tampered: %d %q", code, errOut)
	}
	cut := strings.Join(strings.SplitAfter(log.String(), "\n")[:2], "")
	if code, _, errOut := run(cut, "--expect-head", head); code != 1 || !strings.Contains(errOut, "cut off") {
		t.Fatalf("cut: %d %q", code, errOut)
	}
	if code, _, _ := run("", "--expect-head", "nonsense"); code != 2 {
		t.Fatalf("bad flag: %d", code)
	}
	if code, _, _ := run("", filepath.Join(t.TempDir(), "missing")); code != 1 {
		t.Fatalf("missing file: %d", code)
	}
}
