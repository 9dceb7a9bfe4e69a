//go:build !wasip1 && !wasmbox_index

package main

import (
	"fmt"
	"os"
)

func run() {
	fmt.Fprintln(os.Stderr, "shell: this program is built for GOOS=wasip1 (make wasm)")
	os.Exit(2)
}
