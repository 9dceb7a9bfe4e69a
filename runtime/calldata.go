package runtime

import (
	"context"
	"fmt"

	"github.com/wasmbox/wasmbox/third_party/wazero"
	"github.com/wasmbox/wasmbox/third_party/wazero/api"
)

// CallABI documents how the exports of a live instance (see Instance) take
// bytes from the host and give bytes back, beyond their i32 parameters and
// result:
//
//	(import "wasmbox" "call_input"  (func (param $ptr i32) (param $len i32) (result i32)))
//	(import "wasmbox" "call_output" (func (param $ptr i32) (param $len i32) (result i32)))
//
// The host calls an export with the length of the call's input among its
// parameters (see Instance.CallData); the guest allocates that much and
// call_input copies the input to ptr (len must be exactly the input's
// length). call_output appends len bytes at ptr to the call's output; the
// host caps the output (EFBIG past the cap, nothing appended). Both return
// a WASI errno: 0, 28 EINVAL (wrong length), 21 EFAULT (out of memory
// bounds), 22 EFBIG (output over the cap), 52 ENOSYS (not inside a
// CallData call).
const CallABI = "wasmbox.call_input/call_output"

// ErrnoFbig is EFBIG.
const ErrnoFbig uint32 = 22

// callData is the input and output of one CallData call.
type callData struct {
	in     []byte
	out    []byte
	max    int
	overed bool
}

type callDataKey struct{}

func newCallFunctions(b wazero.HostModuleBuilder) wazero.HostModuleBuilder {
	i32 := api.ValueTypeI32
	return b.
		NewFunctionBuilder().
		WithGoModuleFunction(halting(hostCallInput), []api.ValueType{i32, i32}, []api.ValueType{i32}).
		WithParameterNames("ptr", "len").WithResultNames("errno").
		Export("call_input").
		NewFunctionBuilder().
		WithGoModuleFunction(halting(hostCallOutput), []api.ValueType{i32, i32}, []api.ValueType{i32}).
		WithParameterNames("ptr", "len").WithResultNames("errno").
		Export("call_output")
}

func hostCallInput(ctx context.Context, mod api.Module, stack []uint64) {
	cd, _ := ctx.Value(callDataKey{}).(*callData)
	ptr, n := uint32(stack[0]), uint32(stack[1])
	switch {
	case cd == nil:
		stack[0] = uint64(ErrnoNosys)
	case int(n) != len(cd.in):
		stack[0] = uint64(ErrnoInval)
	case mod.Memory() == nil || !mod.Memory().Write(ptr, cd.in):
		stack[0] = uint64(ErrnoFault)
	default:
		stack[0] = uint64(ErrnoSuccess)
	}
}

func hostCallOutput(ctx context.Context, mod api.Module, stack []uint64) {
	cd, _ := ctx.Value(callDataKey{}).(*callData)
	ptr, n := uint32(stack[0]), uint32(stack[1])
	if cd == nil {
		stack[0] = uint64(ErrnoNosys)
		return
	}
	if len(cd.out)+int(n) > cd.max {
		cd.overed = true
		stack[0] = uint64(ErrnoFbig)
		return
	}
	var b []byte
	var ok bool
	if mem := mod.Memory(); mem != nil {
		b, ok = mem.Read(ptr, n)
	}
	if !ok {
		stack[0] = uint64(ErrnoFault)
		return
	}
	cd.out = append(cd.out, b...)
	stack[0] = uint64(ErrnoSuccess)
}

// CallData calls the exported function name like Call, with input
// available to the guest through call_input and what it gives to
// call_output returned as output, at most maxOutput bytes (see CallABI).
// The guest learns the input's length from the parameters the caller
// passes.
func (in *Instance) CallData(ctx context.Context, name string, input []byte, maxOutput int, params ...uint64) ([]uint64, []byte, error) {
	cd := &callData{in: input, max: maxOutput}
	res, err := in.Call(context.WithValue(ctx, callDataKey{}, cd), name, params...)
	if err == nil && cd.overed {
		err = fmt.Errorf("%s: %s: output over %d bytes", in.m.name, name, maxOutput)
	}
	return res, cd.out, err
}
