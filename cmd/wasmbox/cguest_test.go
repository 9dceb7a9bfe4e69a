package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// clangWasm compiles a C program for wasm32-wasi with Debian's clang-19 and
// wasi-libc (installed by the Python build, make python, and by .ci/run),
// or skips.
func clangWasm(t *testing.T, src string) string {
	t.Helper()
	clang, err := exec.LookPath("clang-19")
	if err != nil {
		t.Skip("clang-19 not installed")
	}
	if _, err := os.Stat("/usr/lib/wasm32-wasi/crt1.o"); err != nil {
		t.Skip("wasi-libc not installed")
	}
	dir := t.TempDir()
	c := filepath.Join(dir, "m.c")
	out := filepath.Join(dir, "m.wasm")
	os.WriteFile(c, []byte(src), 0o644)
	if b, err := exec.Command(clang, "--target=wasm32-wasi", "--sysroot=/usr", "-O2", "-o", out, c).CombinedOutput(); err != nil {
		t.Skipf("clang-19 cannot build for wasm32-wasi here: %v %s", err, b)
	}
	return out
}

// A C guest that mallocs until malloc fails sees NULL at the memory limit
// (memory.grow answers -1) and is then reported as over its limit; it
// never spins to its deadline.
func TestCGuestMallocUntilNull(t *testing.T) {
	m := clangWasm(t, `#include <stdio.h>
#include <stdlib.h>
int main(void) {
	size_t n = 0;
	for (;;) {
		char *volatile p = malloc(1 << 20);
		if (!p) { printf("malloc failed after %zu MiB\n", n); return 3; }
		p[0] = 1;
		n++;
	}
}
`)
	_, cache := fixtures(t)
	var stdout, stderr bytes.Buffer
	code := doMain([]string{"--cachedir", cache, "exec", "--memory", "16MiB", "--timeout", "60s", m}, strings.NewReader(""), &stdout, &stderr)
	if !strings.HasPrefix(stdout.String(), "malloc failed after 1") {
		t.Fatalf("the guest never saw malloc fail: exit %d, stdout %q, stderr %q", code, stdout.String(), stderr.String())
	}
	if code != 137 || !strings.Contains(stderr.String(), "memory limit exceeded") {
		t.Fatalf("exit %d, stderr %q", code, stderr.String())
	}
}
