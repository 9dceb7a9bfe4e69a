// Command spawn calls the wasmbox.spawn host function with the JSON
// request in argv[1] and prints "errno=E status=S" to stderr; it exits with
// the child's status when the spawn ran, else with 100+errno.
package main

import (
	"fmt"
	"os"
	"unsafe"
)

//go:wasmimport wasmbox spawn
func spawn(reqPtr unsafe.Pointer, reqLen uint32, statusPtr unsafe.Pointer) uint32

func main() {
	req := []byte(os.Args[1])
	var status uint32
	errno := spawn(unsafe.Pointer(unsafe.SliceData(req)), uint32(len(req)), unsafe.Pointer(&status))
	fmt.Fprintf(os.Stderr, "errno=%d status=%d\n", errno, status)
	if errno != 0 {
		os.Exit(100 + int(errno))
	}
	os.Exit(int(status))
}
