package runtime_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wasmbox/wasmbox/third_party/wazero"
	"github.com/wasmbox/wasmbox/third_party/wazero/api"

	"github.com/wasmbox/wasmbox/runtime"
	"github.com/wasmbox/wasmbox/runtime/runtimetest"
	"github.com/wasmbox/wasmbox/wasi/preview1"
)

// The compiled code of a module comes back from the on-disk cache in a new
// runtime (a new process in real use), and an entry that was damaged on
// disk is a miss that compiles the module again, not an error that breaks
// every later start (upstream wazero returns "checksum mismatch" until the
// cache is cleared; third_party/wazero/PATCHES.md).
func TestCompileCacheDamagedEntry(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	bin := runtimetest.Guest(t, "args")
	run := func() string {
		t.Helper()
		rt, err := runtime.New(ctx, runtime.Config{CacheDir: dir})
		if err != nil {
			t.Fatal(err)
		}
		defer rt.Close(ctx)
		m, err := rt.Compile(ctx, "args", bin)
		if err != nil {
			t.Fatalf("compile: %v", err)
		}
		var out bytes.Buffer
		st, err := preview1.NewState(preview1.Config{Args: []string{"args", "one", "two"}, Stdout: &out})
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		if err := rt.Run(ctx, m, wazero.NewModuleConfig(), runtime.RunOptions{WASI: st}); err != nil {
			t.Fatalf("run: %v", err)
		}
		return out.String()
	}
	want := run()
	if !strings.Contains(want, "one") {
		t.Fatalf("output %q", want)
	}
	// Damage every compiled-code entry (not the prepared modules, which
	// have their own test) in the middle of its machine code.
	var damaged int
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || strings.Contains(p, string(filepath.Separator)+"prepared"+string(filepath.Separator)) {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil || len(b) < 4096 {
			return nil
		}
		for i := len(b) / 2; i < len(b)/2+64; i++ {
			b[i] ^= 0xff
		}
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		damaged++
		return nil
	})
	if damaged == 0 {
		t.Fatal("no compiled-code entry found under the cache directory")
	}
	if got := run(); got != want {
		t.Fatalf("after damage: %q, want %q", got, want)
	}
	// And the entry was written again: a third runtime loads it.
	if got := run(); got != want {
		t.Fatalf("third run: %q, want %q", got, want)
	}
}

// A module compiled under more features than another runtime enables is
// refused by that runtime even when both share a compilation cache: the
// cache does not let a module skip the validation it would fail. (The
// patched wazero skips validating function bodies on a cache hit; the
// features are part of the cache key for that reason.)
func TestCompileCacheFeaturesStillValidated(t *testing.T) {
	ctx := context.Background()
	cache, err := wazero.NewCompilationCacheWithDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer cache.Close(ctx)
	// i32.extend8_s is sign-extension, a WebAssembly 2.0 feature.
	bin := runtimetest.Module{Funcs: []runtimetest.Func{{
		Type:   runtimetest.FuncType{Results: []byte{runtimetest.I32}},
		Body:   append(runtimetest.I32Const(0x80), 0xc0),
		Export: "f",
	}}}.Encode()
	v2 := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigCompiler().
		WithCoreFeatures(api.CoreFeaturesV2).WithCompilationCache(cache))
	defer v2.Close(ctx)
	if _, err := v2.CompileModule(ctx, bin); err != nil {
		t.Fatalf("2.0 runtime: %v", err)
	}
	for i := 0; i < 2; i++ { // from the file cache, then from memory
		v1 := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigCompiler().
			WithCoreFeatures(api.CoreFeaturesV1).WithCompilationCache(cache))
		_, err := v1.CompileModule(ctx, bin)
		v1.Close(ctx)
		if err == nil || !strings.Contains(err.Error(), "sign-extension") {
			t.Fatalf("1.0 runtime compiled a 2.0 module from the cache: err = %v", err)
		}
	}
}
