package runtime

import (
	"os"
	"testing"

	"github.com/wasmbox/wasmbox/internal/wasmbin"
)

func TestMinMemoryPages(t *testing.T) {
	mod := func(secs ...wasmbin.Section) []byte { return wasmbin.Encode(secs) }
	mem := func(body ...byte) wasmbin.Section { return wasmbin.Section{ID: wasmbin.SecMemory, Body: body} }
	tests := []struct {
		name string
		in   []byte
		want uint32
	}{
		{"no memory", mod(wasmbin.Section{ID: wasmbin.SecType, Body: []byte{0}}), 0},
		{"one memory", mod(mem(1, 0, 17)), 17},
		{"with max", mod(mem(1, 1, 0x80, 0x01, 0x80, 0x02)), 128},
		{"shared", mod(mem(1, 3, 5, 9)), 5},
		{"first of two", mod(mem(2, 0, 3, 0, 4)), 3},
		{"64-bit past 2^32", mod(mem(1, 4, 0x80, 0x80, 0x80, 0x80, 0x10)), 0},
		{"truncated memory", mod(mem(1, 1, 3)), 0},
		{"not wasm", []byte("#!/bin/sh\n"), 0},
		{"overrunning section", append(mod(), wasmbin.SecMemory, 9, 1), 0},
		{"empty", nil, 0},
	}
	for _, tt := range tests {
		got, err := minMemoryPages(tt.in)
		if err != nil || got != tt.want {
			t.Errorf("%s: minMemoryPages = %d, %v; want %d", tt.name, got, err, tt.want)
		}
	}
	if b, err := os.ReadFile("../wasm/coreutils.wasm"); err == nil {
		if got, err := minMemoryPages(b); err != nil || got != 128 {
			t.Errorf("coreutils.wasm: %d, %v; want the 128 pages of make wasm", got, err)
		}
	}
}
