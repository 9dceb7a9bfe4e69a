package frontend

import (
	"github.com/wasmbox/wasmbox/third_party/wazero/internal/engine/wazevo/ssa"
	"github.com/wasmbox/wasmbox/third_party/wazero/internal/wasm"
)

func FunctionIndexToFuncRef(idx wasm.Index) ssa.FuncRef {
	return ssa.FuncRef(idx)
}
