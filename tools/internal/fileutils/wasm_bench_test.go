//go:build wasmbench

package fileutils

// Timing of the file commands inside wazero (wasip1), behind a build tag
// because it builds the whole tool module first:
//
//	go test ./tools/internal/fileutils -tags wasmbench -run WasmTiming -v

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wasmbox/wasmbox/third_party/wazero"
	"github.com/wasmbox/wasmbox/third_party/wazero/imports/wasi_snapshot_preview1"
)

func TestWasmTiming(t *testing.T) {
	tmp := t.TempDir()
	wasmPath := filepath.Join(tmp, "coreutils.wasm")
	build := exec.Command("go", "build", "-o", wasmPath, "../../coreutils")
	build.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	code, _ := os.ReadFile(wasmPath)
	ctx := context.Background()
	rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigCompiler())
	defer rt.Close(ctx)
	wasi_snapshot_preview1.MustInstantiate(ctx, rt)
	rt.NewHostModuleBuilder("wasmbox").NewFunctionBuilder().
		WithFunc(func(ctx context.Context, a, b, c uint32) uint32 { return 52 }).Export("spawn").Instantiate(ctx)
	mod, err := rt.CompileModule(ctx, code)
	if err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(tmp, "root")
	work := filepath.Join(root, "w")
	os.MkdirAll(work, 0o755)
	// Inputs: a 20 MB text file, two 20k-line files with scattered edits,
	// and a tree of 5000 files.
	var big bytes.Buffer
	for i := 0; big.Len() < 20<<20; i++ {
		fmt.Fprintf(&big, "line %d: the quick brown fox jumps over the lazy dog\n", i)
	}
	os.WriteFile(filepath.Join(work, "big.txt"), big.Bytes(), 0o644)
	var a, b strings.Builder
	for i := 0; i < 20000; i++ {
		fmt.Fprintf(&a, "row %d\n", i)
		if i%97 == 0 {
			fmt.Fprintf(&b, "changed %d\n", i)
		} else if i%101 != 0 {
			fmt.Fprintf(&b, "row %d\n", i)
		}
	}
	os.WriteFile(filepath.Join(work, "a.txt"), []byte(a.String()), 0o644)
	os.WriteFile(filepath.Join(work, "b.txt"), []byte(b.String()), 0o644)
	for i := 0; i < 5000; i++ {
		p := filepath.Join(work, "tree", fmt.Sprintf("d%02d", i%50), fmt.Sprintf("f%04d.txt", i))
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, []byte("x\n"), 0o644)
	}
	for _, argv := range [][]string{
		{"true"}, {"cat", "big.txt"}, {"cat", "-n", "big.txt"}, {"od", "-An", "-tx1", "-N", "1000000", "big.txt"},
		{"xxd", "-l", "1000000", "big.txt"}, {"diff", "a.txt", "b.txt"}, {"diff", "-u", "a.txt", "b.txt"},
		{"ls", "-lR", "tree"}, {"find", "tree", "-name", "*7.txt"}, {"du", "-s", "tree"},
		{"tar", "-czf", "t.tgz", "tree"}, {"tar", "-tzf", "t.tgz"}, {"gzip", "-kf", "big.txt"}, {"zcat", "big.txt.gz"},
		{"cp", "-r", "tree", "tree2"}, {"rm", "-r", "tree2"}, {"split", "-l", "100000", "big.txt", "part"},
		{"strings", "-n", "8", "big.txt"},
	} {
		if argv[0] == "true" {
			continue
		}
		var stdout, stderr bytes.Buffer
		cfg := wazero.NewModuleConfig().WithArgs(argv...).WithStdout(&stdout).WithStderr(&stderr).
			WithFSConfig(wazero.NewFSConfig().WithDirMount(root, "/")).WithEnv("PWD", "/w").
			WithSysWalltime().WithSysNanotime().WithName("")
		start := time.Now()
		_, err := rt.InstantiateModule(ctx, mod, cfg)
		el := time.Since(start)
		status := "ok"
		if err != nil {
			status = err.Error()
		}
		t.Logf("%-45s %8.1f ms  out %9d B  %s %s", strings.Join(argv, " "), float64(el.Microseconds())/1000, stdout.Len(), status, strings.TrimSpace(stderr.String()))
	}
}
