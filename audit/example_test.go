package audit_test

import (
	"bytes"
	"context"
	"fmt"
	"strings"

	"github.com/wasmbox/wasmbox/audit"
)

func ExampleRedactor() {
	r := audit.NewRedactor(audit.WithEnviron([]string{"GITHUB_TOKEN=gh-secret-value"}))
	fmt.Println(r.Redact("pushing with gh-secret-value and AKIAIOSFODNN7EXAMPLE"))

	// A secret split across writes is still caught.
	var out bytes.Buffer
	w := r.NewWriter(&out)
	w.Write([]byte("Authorization: Bea"))
	w.Write([]byte("rer abcdefgh12345678\n"))
	w.Close()
	fmt.Print(out.String())
	// Output:
	// pushing with [REDACTED] and [REDACTED]
	// Authorization: Bearer [REDACTED]
}

func ExampleVerify() {
	var log bytes.Buffer
	l := audit.New(&log, audit.WithRedactor(audit.NewRedactor(audit.WithEnviron(nil))))
	l.Log(context.Background(), audit.Event{Kind: audit.KindExec, Argv: []string{"git", "status"}})
	l.Log(context.Background(), audit.Event{Kind: audit.KindExec, Argv: []string{"git", "log"}})
	fmt.Println(audit.Verify(strings.NewReader(log.String())))

	tampered := strings.Replace(log.String(), `"status"`, `"stash"`, 1)
	fmt.Println(audit.Verify(strings.NewReader(tampered)))
	// Output:
	// <nil>
	// audit: line 1: hash does not match the content
}
