package awkcmd

import (
	"bytes"
	"strings"
	"testing"

	"github.com/wasmbox/wasmbox/tools/internal/cmd"
)

func TestRewriteAwkSystem(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`BEGIN { system("echo hi") }`, `BEGIN { __wasmbox_system("echo hi") }`},
		{`{ r = system ("x") }`, `{ r = __wasmbox_system ("x") }`},
		{`{ print "system(" ; mysystem(1) }`, `{ print "system(" ; mysystem(1) }`},
		{"# system(x)\n{ system_x = 1 }", "# system(x)\n{ system_x = 1 }"},
		{`{ print "a\"system(" }`, `{ print "a\"system(" }`},
	} {
		if got := rewriteAwkSystem(tc.in); got != tc.want {
			t.Errorf("rewrite(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// TestAwkSystem runs system() through cmd.Spawn (natively: a host sh).
func TestAwkSystem(t *testing.T) {
	fn, _ := cmd.Lookup("awk")
	var out, errb bytes.Buffer
	st := fn(&cmd.Env{Args: []string{"awk", `BEGIN { printf "before "; r = system("echo child; exit 3"); print "status", r }`},
		Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb})
	if st != 0 || out.String() != "before child\nstatus 3\n" {
		t.Fatalf("status %d, stdout %q, stderr %q", st, out.String(), errb.String())
	}
	out.Reset()
	st = fn(&cmd.Env{Args: []string{"awk", `BEGIN { print "x" | "sort" }`}, Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb})
	if st != 2 || !strings.Contains(errb.String(), "not supported in the sandbox") {
		t.Fatalf("pipe: status %d, stderr %q", st, errb.String())
	}
}
