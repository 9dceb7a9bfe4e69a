// Command cwd imports wasmbox.getcwd (runtime.CwdABI) and prints what it
// reports ("getcwd=DIR", or "getcwd: none"), then its sorted environment
// (one "env:K=V" line each).
package main

import (
	"fmt"
	"os"
	"sort"
	"unsafe"
)

//go:wasmimport wasmbox getcwd
func hostGetcwd(buf unsafe.Pointer, n uint32) uint32

func main() {
	buf := make([]byte, 4) // small, so that the retry with the length runs
	for {
		n := hostGetcwd(unsafe.Pointer(&buf[0]), uint32(len(buf)))
		if n == 0 {
			fmt.Println("getcwd: none")
			break
		}
		if int(n) <= len(buf) {
			fmt.Printf("getcwd=%s\n", buf[:n])
			break
		}
		buf = make([]byte, n)
	}
	env := os.Environ()
	sort.Strings(env)
	for _, e := range env {
		fmt.Printf("env:%s\n", e)
	}
}
