package runtime_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"hash/crc32"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wasmbox/wasmbox/runtime"
	"github.com/wasmbox/wasmbox/runtime/runtimetest"
	"github.com/wasmbox/wasmbox/third_party/wazero"
	"github.com/wasmbox/wasmbox/wasi/preview1"
	"github.com/wasmbox/wasmbox/wasm"
)

// compiledEntries lists wazero's compiled-code entries under the cache
// directory dir (not the prepared modules, not the key).
func compiledEntries(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() && strings.Contains(filepath.Base(filepath.Dir(p)), "wazero-") {
			out = append(out, p)
		}
		return nil
	})
	if len(out) == 0 {
		t.Fatal("no compiled-code entry under the cache directory")
	}
	return out
}

// tamperCode rewrites the machine code of the wazero cache entry b in place:
// its first 4 KiB become int3 (0xCC), and the entry's CRC-32C of the code
// is recomputed, so that only a MAC can tell. It returns false if b is not
// an entry. (The layout is the same before and after the MAC: the code at
// a 64 KiB boundary, its CRC after it.)
func tamperCode(b []byte) bool {
	if len(b) < 11 || string(b[:5]) != "WAZEV" {
		return false
	}
	h := 7 + int(b[6]) + 4
	if len(b) < h {
		return false
	}
	n := int(binary.LittleEndian.Uint32(b[h-4 : h]))
	pos := h + 8*n + 8
	if len(b) < pos {
		return false
	}
	execLen := int(binary.LittleEndian.Uint64(b[pos-8 : pos]))
	codeAt := pos + (64<<10-pos%(64<<10))%(64<<10)
	codeEnd := codeAt + execLen
	if execLen == 0 || codeEnd+4 > len(b) {
		return false
	}
	for i := codeAt; i < codeAt+min(execLen, 4096); i++ {
		b[i] = 0xcc
	}
	binary.LittleEndian.PutUint32(b[codeEnd:], crc32.Checksum(b[codeAt:codeEnd], crc32.MakeTable(crc32.Castagnoli)))
	return true
}

func runArgsGuest(t *testing.T, rt *runtime.Runtime, m *runtime.Module) string {
	t.Helper()
	var out bytes.Buffer
	st, err := preview1.NewState(preview1.Config{Args: []string{"args", "one", "two"}, Stdout: &out})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := rt.Run(context.Background(), m, wazero.NewModuleConfig(), runtime.RunOptions{WASI: st}); err != nil {
		t.Fatalf("run: %v", err)
	}
	return out.String()
}

// A compiled-code entry whose machine code was changed, with its CRC
// recomputed (what the CRC alone cannot catch), is a miss: the next runtime
// compiles the module again and replaces the entry, and never executes the
// changed code. Before the MAC (b1f9305), the entry was loaded and its code
// mapped executable: the check below that the entry was rewritten failed
// (and running it would have hit the int3).
func TestCompileCacheTamperedEntryCorrectCRC(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	bin := runtimetest.Guest(t, "args")
	compile := func() (*runtime.Runtime, *runtime.Module) {
		t.Helper()
		rt, err := runtime.New(ctx, runtime.Config{CacheDir: dir})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { rt.Close(ctx) })
		m, err := rt.Compile(ctx, "args", bin)
		if err != nil {
			t.Fatalf("compile: %v", err)
		}
		return rt, m
	}
	rt, m := compile()
	want := runArgsGuest(t, rt, m)
	tampered := map[string][]byte{}
	for _, p := range compiledEntries(t, dir) {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if !tamperCode(b) {
			continue
		}
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		tampered[p] = b
	}
	if len(tampered) == 0 {
		t.Fatal("no entry with machine code to tamper with")
	}
	rt2, m2 := compile()
	for p, b := range tampered {
		if now, err := os.ReadFile(p); err == nil && bytes.Equal(now, b) {
			t.Fatalf("the tampered entry %s (correct CRC) was loaded as a hit and kept", filepath.Base(p))
		}
	}
	if got := runArgsGuest(t, rt2, m2); got != want {
		t.Fatalf("after tampering: %q, want %q", got, want)
	}
}

// The entries of one cache directory are not valid in another: each has
// its own key (cachemac.KeyFile), so an entry copied from elsewhere (a
// restored or shared cache) is a miss, and a key file that others can read
// is refused with a one-line error.
func TestCompileCacheKey(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	rt, err := runtime.New(ctx, runtime.Config{CacheDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	rt.Close(ctx)
	key := filepath.Join(dir, "mac.key")
	fi, err := os.Stat(key)
	if err != nil || fi.Mode().Perm() != 0o600 || fi.Size() != 32 {
		t.Fatalf("key file: %v %v", fi, err)
	}
	b1, _ := os.ReadFile(key)
	other := t.TempDir()
	if rt, err := runtime.New(ctx, runtime.Config{CacheDir: other}); err != nil {
		t.Fatal(err)
	} else {
		rt.Close(ctx)
	}
	if b2, _ := os.ReadFile(filepath.Join(other, "mac.key")); bytes.Equal(b1, b2) {
		t.Fatal("two cache directories share a key")
	}
	os.Chmod(key, 0o644)
	_, err = runtime.New(ctx, runtime.Config{CacheDir: dir})
	if err == nil || !strings.Contains(err.Error(), key) || strings.Contains(err.Error(), "\n") {
		t.Fatalf("a key readable by others: %v", err)
	}
}

// TrimCache evicts the least recently used entries first, until the
// directory fits its bound, and keeps the key, the entries used since the
// compile in flight started, and temporary files being written.
func TestTrimCacheLRU(t *testing.T) {
	dir := t.TempDir()
	base := time.Now().Add(-10 * time.Hour)
	write := func(rel string, size int, age time.Duration) string {
		p := filepath.Join(dir, rel)
		os.MkdirAll(filepath.Dir(p), 0o700)
		if err := os.WriteFile(p, make([]byte, size), 0o600); err != nil {
			t.Fatal(err)
		}
		mt := base.Add(age)
		os.Chtimes(p, mt, mt)
		return p
	}
	key := write("mac.key", 32, 0)
	oldest := write("wazero-x/a", 1000, 1*time.Minute)
	prepOld := write("prepared/b", 1000, 2*time.Minute)
	loopsMid := write("loops/wazero-x/c", 1000, 3*time.Minute)
	recent := write("wazero-x/d", 1000, 4*time.Minute)
	since := base.Add(5 * time.Minute)
	inUse := write("loops/wazero-x/e", 1000, 6*time.Minute) // read by the compile in flight
	justWritten := write("prepared/f", 1000, 7*time.Minute)
	tmp := write("wazero-x/g.123.tmp", 1000, 9*time.Hour+59*time.Minute) // being written
	// 7032 bytes; a bound of 4100 must evict the three oldest entries, in
	// order, and nothing else.
	removed, err := runtime.TrimCache(dir, 4100, since)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{oldest, prepOld, loopsMid}
	if strings.Join(removed, ",") != strings.Join(want, ",") {
		t.Fatalf("removed %v, want %v", removed, want)
	}
	for _, p := range []string{key, recent, inUse, justWritten, tmp} {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("%s was evicted: %v", p, err)
		}
	}
	// Under a bound smaller than what is in use, only what is not in use
	// goes: the bound is exceeded by the compile in flight, never by
	// older entries.
	removed, _ = runtime.TrimCache(dir, 10, since)
	if strings.Join(removed, ",") != recent {
		t.Fatalf("second trim removed %v, want [%s]", removed, recent)
	}
	for _, p := range []string{key, inUse, justWritten, tmp} {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("%s was evicted: %v", p, err)
		}
	}
}

// A runtime with a small bound keeps its cache directory under it after a
// compile, keeping what that compile used: the entries of the module just
// compiled survive, an older module's go.
func TestCompileCacheBounded(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	stale := filepath.Join(dir, "wazero-v0-old", "stale")
	os.MkdirAll(filepath.Dir(stale), 0o700)
	os.WriteFile(stale, make([]byte, 1<<20), 0o600)
	old := time.Now().Add(-time.Hour)
	os.Chtimes(stale, old, old)
	rt, err := runtime.New(ctx, runtime.Config{CacheDir: dir, CacheMaxBytes: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close(ctx)
	m, err := rt.Compile(ctx, "args", runtimetest.Guest(t, "args"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(stale); err == nil {
		t.Fatal("the least recently used entry was not evicted")
	}
	if len(compiledEntries(t, dir)) == 0 {
		t.Fatal("the entry of the module just compiled was evicted")
	}
	if got := runArgsGuest(t, rt, m); !strings.Contains(got, "one") {
		t.Fatalf("output %q", got)
	}
}

// BenchmarkCompileWarmDisk measures a new process's warm start of one tool
// module: a fresh runtime compiling coreutils.wasm with the disk cache (its
// compiled code and prepared entry) already written, the cold compile done
// before the timer starts.
func BenchmarkCompileWarmDisk(b *testing.B) {
	dir := b.TempDir()
	ctx := context.Background()
	compile := func() {
		r, err := runtime.New(ctx, runtime.Config{CacheDir: dir})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := r.Compile(ctx, "coreutils", wasm.Coreutils()); err != nil {
			b.Fatal(err)
		}
		r.Close(ctx)
	}
	compile()
	for b.Loop() {
		compile()
	}
}

// An entry the runtime wrote is a hit for the next runtime: the file is
// read, not written again (a rename would give it a new inode).
func TestCompileCacheHit(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	bin := runtimetest.Guest(t, "args")
	compile := func() {
		t.Helper()
		rt, err := runtime.New(ctx, runtime.Config{CacheDir: dir})
		if err != nil {
			t.Fatal(err)
		}
		defer rt.Close(ctx)
		m, err := rt.Compile(ctx, "args", bin)
		if err != nil {
			t.Fatal(err)
		}
		if got := runArgsGuest(t, rt, m); !strings.Contains(got, "one") {
			t.Fatalf("output %q", got)
		}
	}
	compile()
	inodes := map[string]os.FileInfo{}
	for _, p := range compiledEntries(t, dir) {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		inodes[p] = fi
	}
	compile()
	for p, fi := range inodes {
		now, err := os.Stat(p)
		if err != nil || !os.SameFile(fi, now) {
			t.Fatalf("entry %s was written again: a miss (%v)", filepath.Base(p), err)
		}
	}
}
