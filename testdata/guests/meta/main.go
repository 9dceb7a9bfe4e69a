// Command meta exercises the wasmbox.stat/chmod/chown host calls:
//
//	meta stat PATH       prints "MODE UID GID NLINK" (mode in octal)
//	meta lstat PATH
//	meta chmod OCTAL PATH
//	meta chown UID GID PATH
//
// and exits with the WASI errno of the call.
package main

import (
	"encoding/binary"
	"fmt"
	"os"
	"strconv"
	"unsafe"
)

//go:wasmimport wasmbox stat
func hostStat(pathPtr unsafe.Pointer, pathLen uint32, follow uint32, outPtr unsafe.Pointer) uint32

//go:wasmimport wasmbox chmod
func hostChmod(pathPtr unsafe.Pointer, pathLen uint32, mode uint32, follow uint32) uint32

//go:wasmimport wasmbox chown
func hostChown(pathPtr unsafe.Pointer, pathLen uint32, uid uint32, gid uint32, follow uint32) uint32

func ptr(s string) (unsafe.Pointer, uint32) {
	b := []byte(s)
	return unsafe.Pointer(unsafe.SliceData(b)), uint32(len(b))
}

func main() {
	a := os.Args[1:]
	var errno uint32
	switch a[0] {
	case "stat", "lstat":
		var out [16]byte
		p, n := ptr(a[1])
		follow := uint32(0)
		if a[0] == "stat" {
			follow = 1
		}
		errno = hostStat(p, n, follow, unsafe.Pointer(&out[0]))
		if errno == 0 {
			fmt.Printf("%o %d %d %d\n", binary.LittleEndian.Uint32(out[0:]), binary.LittleEndian.Uint32(out[4:]),
				binary.LittleEndian.Uint32(out[8:]), binary.LittleEndian.Uint32(out[12:]))
		}
	case "chmod":
		m, _ := strconv.ParseUint(a[1], 8, 32)
		p, n := ptr(a[2])
		errno = hostChmod(p, n, uint32(m), 1)
	case "chown":
		u, _ := strconv.ParseInt(a[1], 10, 64)
		g, _ := strconv.ParseInt(a[2], 10, 64)
		p, n := ptr(a[3])
		errno = hostChown(p, n, uint32(u), uint32(g), 1)
	}
	os.Exit(int(errno))
}
