//go:build !linux

package native

import (
	"errors"
	"runtime"
	"strings"
	"testing"
)

// TestNoJailOffLinux: the OS jail is Linux-only, so elsewhere New refuses
// with an error that says so and names the opt-out, and an unjailed Runner
// is built (and says it is unjailed).
func TestNoJailOffLinux(t *testing.T) {
	_, err := New(Config{})
	if !errors.Is(err, ErrNoJail) {
		t.Fatalf("New: %v, want ErrNoJail", err)
	}
	for _, want := range []string{"Linux-only", runtime.GOOS, "--native-unjailed"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	r, err := New(Config{Unjailed: true})
	if err != nil {
		t.Fatal(err)
	}
	if r.Jailed() {
		t.Fatal("Jailed() on an OS without the jail")
	}
}
