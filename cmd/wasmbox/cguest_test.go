package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// wasmClang is Debian's clang-19 with what a link for wasm32-wasi needs:
// wasi-libc and the compiler's wasm32 runtime library
// (libclang-rt-19-dev-wasm32). The Python build, make python and .ci/run
// install them; without them the test skips, and once they are there a
// build that fails fails the test.
func wasmClang(t *testing.T) string {
	t.Helper()
	clang, err := exec.LookPath("clang-19")
	if err != nil {
		t.Skip("clang-19 not installed")
	}
	if _, err := os.Stat("/usr/lib/wasm32-wasi/crt1.o"); err != nil {
		t.Skip("wasi-libc not installed")
	}
	// The runtime library clang-19 itself would link (its path moved
	// between LLVM releases).
	rt, err := exec.Command(clang, "--target=wasm32-wasi", "--sysroot=/usr", "-print-libgcc-file-name").Output()
	if err != nil {
		t.Fatalf("clang-19 -print-libgcc-file-name: %v", err)
	}
	if _, err := os.Stat(strings.TrimSpace(string(rt))); err != nil {
		t.Skipf("clang-19's wasm32 runtime library is not installed (apt-get install libclang-rt-19-dev-wasm32): %v", err)
	}
	return clang
}

// clangWasm compiles a C program for wasm32-wasi with wasmClang's clang-19.
func clangWasm(t *testing.T, src string) string {
	t.Helper()
	clang := wasmClang(t)
	dir := t.TempDir()
	c := filepath.Join(dir, "m.c")
	out := filepath.Join(dir, "m.wasm")
	if err := os.WriteFile(c, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	if b, err := exec.Command(clang, "--target=wasm32-wasi", "--sysroot=/usr", "-O2", "-o", out, c).CombinedOutput(); err != nil {
		t.Fatalf("clang-19: %v\n%s", err, b)
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

// The string functions and the strtod fast path that build/ctools links
// into GNU grep, GNU sed and mawk (wasi_string.c, wasi_strtod.c) agree
// with plain byte loops and with wasi-libc's strtod
// (build/ctools/wasi_string_test.c: every alignment and length near the
// end of memory, random decimals), run the way the tools run: through
// exec, with fuel metering and wazero's simd128.
func TestCToolsStringFunctions(t *testing.T) {
	clang := wasmClang(t)
	dir := filepath.Join("..", "..", "build", "ctools")
	out := filepath.Join(t.TempDir(), "m.wasm")
	// The flags of build.sh for wasi_string.c; -fno-builtin keeps the
	// test's reference loops from becoming calls of what they check.
	args := []string{"--target=wasm32-wasi", "--sysroot=/usr", "-O2", "-fno-builtin", "-msimd128", "-mbulk-memory",
		"-Wl,--wrap=strtod", "-o", out,
		filepath.Join(dir, "wasi_string_test.c"), filepath.Join(dir, "wasi_string.c"), filepath.Join(dir, "wasi_strtod.c")}
	if b, err := exec.Command(clang, args...).CombinedOutput(); err != nil {
		t.Fatalf("clang-19: %v\n%s", err, b)
	}
	_, cache := fixtures(t)
	var stdout, stderr bytes.Buffer
	code := doMain([]string{"--cachedir", cache, "exec", "--timeout", "5m", out}, strings.NewReader(""), &stdout, &stderr)
	if code != 0 || stdout.String() != "ok\n" {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, stdout.String(), stderr.String())
	}
}
