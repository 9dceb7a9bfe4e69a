package native

import (
	"bytes"
	"os"
	"testing"
)

// sleeping reports whether a process, not a zombie, runs "sleep arg"
// (read from /proc, which shows the processes of every pid namespace
// below this one).
func sleeping(t *testing.T, arg string) bool {
	procs, _ := os.ReadDir("/proc")
	for _, p := range procs {
		b, err := os.ReadFile("/proc/" + p.Name() + "/cmdline")
		if err == nil && bytes.Contains(b, []byte("sleep\x00"+arg+"\x00")) {
			st, _ := os.ReadFile("/proc/" + p.Name() + "/stat")
			if i := bytes.LastIndexByte(st, ')'); i > 0 && i+2 < len(st) && st[i+2] == 'Z' {
				continue
			}
			return true
		}
	}
	return false
}
