//go:build ignore

// speedrun times one command of a wasip1 tool module in plain wazero
// (compiler, no fuel metering, no snapshot): the wall and CPU time of the
// run, compilation excluded. It is how tools/SPEED.md compares the wasm
// run of a tool with the native build of the same Go code. Build the
// module as a command (not the c-shared reactor of make wasm):
//
//	GOOS=wasip1 GOARCH=wasm go build -trimpath -ldflags='-s -w -checklinkname=0' -o /tmp/awk.wasm ./tools/awk
//	go run tools/speedrun.go /tmp/awk.wasm DIR awk '{s+=$1} END {print s}' nums.txt
//
// DIR is mounted at / (the working directory). The wasmbox host functions
// the module imports fail with ENOSYS. WGOGC and WGODEBUG set the guest's
// GOGC and GODEBUG (GODEBUG=gctrace=1 shows its collections).
package main

import (
	"context"
	"fmt"
	"os"
	"syscall"
	"time"

	"github.com/wasmbox/wasmbox/third_party/wazero"
	"github.com/wasmbox/wasmbox/third_party/wazero/api"
	"github.com/wasmbox/wasmbox/third_party/wazero/imports/wasi_snapshot_preview1"
	"github.com/wasmbox/wasmbox/third_party/wazero/sys"
)

func main() {
	ctx := context.Background()
	code, err := os.ReadFile(os.Args[1])
	if err != nil {
		panic(err)
	}
	rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigCompiler())
	wasi_snapshot_preview1.MustInstantiate(ctx, rt)
	mod, err := rt.CompileModule(ctx, code)
	if err != nil {
		panic(err)
	}
	hb := rt.NewHostModuleBuilder("wasmbox")
	for _, f := range mod.ImportedFunctions() {
		m, name, _ := f.Import()
		if m != "wasmbox" {
			continue
		}
		hb = hb.NewFunctionBuilder().WithGoModuleFunction(api.GoModuleFunc(func(ctx context.Context, m api.Module, stack []uint64) {
			if len(stack) > 0 {
				stack[0] = 52
			}
		}), f.ParamTypes(), f.ResultTypes()).Export(name)
	}
	if _, err := hb.Instantiate(ctx); err != nil {
		panic(err)
	}
	cfg := wazero.NewModuleConfig().WithArgs(os.Args[3:]...).WithStdout(os.Stdout).WithStderr(os.Stderr).WithStdin(os.Stdin).
		WithFSConfig(wazero.NewFSConfig().WithDirMount(os.Args[2], "/")).WithEnv("PWD", "/")
	if g := os.Getenv("WGOGC"); g != "" {
		cfg = cfg.WithEnv("GOGC", g)
	}
	if g := os.Getenv("WGODEBUG"); g != "" {
		cfg = cfg.WithEnv("GODEBUG", g)
	}
	cfg = cfg.WithSysWalltime().WithSysNanotime()
	var r0, r1 syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &r0)
	t := time.Now()
	_, err = rt.InstantiateModule(ctx, mod, cfg)
	d := time.Since(t)
	syscall.Getrusage(syscall.RUSAGE_SELF, &r1)
	cpu := time.Duration(r1.Utime.Nano() - r0.Utime.Nano() + r1.Stime.Nano() - r0.Stime.Nano())
	if e, ok := err.(*sys.ExitError); ok && e.ExitCode() == 0 {
		err = nil
	}
	fmt.Fprintf(os.Stderr, "wasm time: %v cpu %v err=%v\n", d, cpu, err)
}
