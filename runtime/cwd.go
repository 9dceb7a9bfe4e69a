package runtime

import (
	"context"

	"github.com/wasmbox/wasmbox/third_party/wazero"
	"github.com/wasmbox/wasmbox/third_party/wazero/api"
)

// CwdABI documents the host call through which a guest learns its working
// directory without an environment variable:
//
//	(import "wasmbox" "getcwd" (func (param $buf_ptr i32) (param $buf_len i32) (result i32)))
//
// The result is the length in bytes of the directory (an absolute guest
// path); the directory is written at buf_ptr when it fits in buf_len bytes,
// else nothing is written and the guest calls again with a larger buffer.
// 0 means that the host gives no directory for this run (or buf_ptr is out
// of memory): the guest falls back to $PWD.
//
// WASI preview1 has no working directory, so that a wasip1 program takes
// $PWD for one: a module that does not import getcwd is given the
// directory as $PWD in its environment (see the executor). One that does
// gets the environment it was given, exactly: `env -i printenv` prints
// nothing.
const CwdABI = "wasmbox.getcwd"

// CwdImport is the name of the import of CwdABI in SpawnModuleName.
const CwdImport = "getcwd"

type cwdKey struct{}

func addCwdFunction(b wazero.HostModuleBuilder) wazero.HostModuleBuilder {
	i32 := api.ValueTypeI32
	return b.
		NewFunctionBuilder().
		WithGoModuleFunction(halting(hostGetcwd), []api.ValueType{i32, i32}, []api.ValueType{i32}).
		WithParameterNames("buf_ptr", "buf_len").WithResultNames("len").
		Export(CwdImport)
}

func hostGetcwd(ctx context.Context, mod api.Module, stack []uint64) {
	dir, _ := ctx.Value(cwdKey{}).(string)
	ptr, n := uint32(stack[0]), uint32(stack[1])
	switch {
	case dir == "":
		stack[0] = 0
	case uint64(len(dir)) > uint64(n):
		stack[0] = uint64(len(dir))
	case mod.Memory() == nil || !mod.Memory().WriteString(ptr, dir):
		stack[0] = 0
	default:
		stack[0] = uint64(len(dir))
	}
}

// Imports reports whether the module imports the function module.name.
func (m *Module) Imports(module, name string) bool {
	return m.imports[[2]string{module, name}]
}
