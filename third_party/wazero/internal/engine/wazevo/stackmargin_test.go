package wazevo

import (
	"testing"
	"unsafe"

	"github.com/wasmbox/wasmbox/third_party/wazero/internal/engine/wazevo/wazevoapi"
)

// The recorded bottom of a call engine's stack is StackCheckMargin bytes
// above its lowest byte, on a new stack and on a grown one (wasmbox patch
// 17: the amd64 prologue of a function that needs at most the margin
// compares RSP with the recorded bottom alone, so that without the margin
// the function's frame could reach below the stack).
func TestStackBottomMargin(t *testing.T) {
	c := &callEngine{}
	c.init()
	if got, want := uintptr(unsafe.Pointer(c.execCtx.stackBottomPtr)), uintptr(unsafe.Pointer(&c.stack[0]))+wazevoapi.StackCheckMargin; got != want {
		t.Fatalf("new stack: bottom at %#x, want %#x (lowest byte + %d)", got, want, wazevoapi.StackCheckMargin)
	}
	for i := 0; i < 3; i++ {
		// A Go call made 64 bytes below the top.
		spIdx := int(c.stackTop - 64 - uintptr(unsafe.Pointer(&c.stack[0])))
		c.execCtx.stackPointerBeforeGoCall = (*uint64)(unsafe.Pointer(&c.stack[spIdx]))
		c.execCtx.framePointerBeforeGoCall = uintptr(unsafe.Pointer(&c.stack[spIdx+16]))
		c.execCtx.stackGrowRequiredSize = 4000
		oldLen := len(c.stack)
		newSP, _, err := c.growStack()
		if err != nil {
			t.Fatal(err)
		}
		if len(c.stack) <= oldLen {
			t.Fatalf("grown stack of %d bytes, was %d", len(c.stack), oldLen)
		}
		if got, want := uintptr(unsafe.Pointer(c.execCtx.stackBottomPtr)), uintptr(unsafe.Pointer(&c.stack[0]))+wazevoapi.StackCheckMargin; got != want {
			t.Fatalf("grown stack: bottom at %#x, want %#x (lowest byte + %d)", got, want, wazevoapi.StackCheckMargin)
		}
		if newSP-4000 <= uintptr(unsafe.Pointer(c.execCtx.stackBottomPtr)) {
			t.Fatalf("grown stack: the 4000 bytes required are not above the bottom")
		}
	}
}
