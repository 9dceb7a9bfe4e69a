//go:build !linux

package native

import (
	"os/exec"
	"strings"
	"testing"
)

// sleeping reports whether a process, not a zombie, runs "sleep arg",
// from ps (there is no /proc on macOS and the BSDs).
func sleeping(t *testing.T, arg string) bool {
	t.Helper()
	out, err := exec.Command("ps", "-A", "-ww", "-o", "stat=", "-o", "command=").Output()
	if err != nil {
		t.Fatalf("ps: %v", err)
	}
	for _, line := range strings.Split(string(out), "\n") {
		stat, cmd, ok := strings.Cut(strings.TrimSpace(line), " ")
		if !ok || strings.HasPrefix(stat, "Z") {
			continue
		}
		if f := strings.Fields(cmd); len(f) == 2 && f[0] == "sleep" && f[1] == arg {
			return true
		}
	}
	return false
}
