package runtimetest

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"sort"
	"sync"
	"testing"
)

// GuestsDir returns the directory holding the Go sources of the test
// guests: testdata/guests at the root of the wasmbox module.
func GuestsDir() string {
	_, file, _, _ := goruntime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "testdata", "guests")
}

var (
	guestMu    sync.Mutex
	guestBuilt = map[string][]byte{}
)

// Guest returns the wasip1 binary of the Go program testdata/guests/NAME,
// building it with `GOOS=wasip1 GOARCH=wasm go build -trimpath` on first
// use. Builds are cached under os.UserCacheDir()/wasmbox-test, keyed by a
// hash of the sources and the Go version, so reruns cost nothing. A build
// failure fails the test at once.
func Guest(tb testing.TB, name string) []byte {
	tb.Helper()
	b, err := BuildGuest(name)
	if err != nil {
		tb.Fatalf("building guest %s: %v", name, err)
	}
	return b
}

// BuildGuest is Guest without a testing.TB, for TestMain and benchmarks.
func BuildGuest(name string) ([]byte, error) {
	return BuildGoDir(filepath.Join(GuestsDir(), name))
}

// BuildGoDir returns the wasip1 binary of the Go program in the directory
// src (any package's testdata), built with `GOOS=wasip1 GOARCH=wasm go
// build -trimpath` on first use and cached as Guest's are.
func BuildGoDir(src string) ([]byte, error) {
	src, err := filepath.Abs(src)
	if err != nil {
		return nil, err
	}
	guestMu.Lock()
	defer guestMu.Unlock()
	if b, ok := guestBuilt[src]; ok {
		return b, nil
	}
	name := filepath.Base(src)
	key, err := hashDir(src)
	if err != nil {
		return nil, err
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	dir := filepath.Join(cache, "wasmbox-test")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	out := filepath.Join(dir, name+"-"+key[:16]+".wasm")
	if b, err := os.ReadFile(out); err == nil {
		guestBuilt[src] = b
		return b, nil
	}
	tmp, err := os.CreateTemp(dir, name+"-*.tmp")
	if err != nil {
		return nil, err
	}
	tmp.Close()
	defer os.Remove(tmp.Name())
	goBin := filepath.Join(goruntime.GOROOT(), "bin", "go")
	if _, err := os.Stat(goBin); err != nil {
		goBin = "go"
	}
	cmd := exec.Command(goBin, "build", "-trimpath", "-o", tmp.Name(), ".")
	cmd.Dir = src
	cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm", "CGO_ENABLED=0")
	if msg, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("go build %s: %v\n%s", name, err, msg)
	}
	if err := os.Rename(tmp.Name(), out); err != nil {
		return nil, err
	}
	b, err := os.ReadFile(out)
	if err != nil {
		return nil, err
	}
	guestBuilt[src] = b
	return b, nil
}

func hashDir(dir string) (string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return "", err
	}
	names := make([]string, 0, len(entries))
	for _, e := range entries {
		if !e.IsDir() {
			names = append(names, e.Name())
		}
	}
	sort.Strings(names)
	h := sha256.New()
	fmt.Fprintf(h, "%s\n", goruntime.Version())
	for _, n := range names {
		b, err := os.ReadFile(filepath.Join(dir, n))
		if err != nil {
			return "", err
		}
		fmt.Fprintf(h, "%s %d\n", n, len(b))
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
