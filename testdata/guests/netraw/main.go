// Command netraw drives the network ABI (runtime.NetABI) by hand: it asks
// net_connect for the JSON request in argv[1], prints "errno=E" and, on
// failure, "kind=K msg=M"; on success it writes argv[2] (raw bytes, the
// guest's HTTP requests) to the connection, copies what comes back to
// stdout, and prints "net_error=M" at the end. With argv[1] "badfd" it
// calls net_error on its stdout and prints the errno.
package main

import (
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"unsafe"
)

//go:wasmimport wasmbox net_connect
func netConnect(reqPtr unsafe.Pointer, reqLen uint32, outPtr unsafe.Pointer, outCap uint32) uint32

//go:wasmimport wasmbox net_error
func netError(rfd uint32, bufPtr unsafe.Pointer, bufCap uint32, lenPtr unsafe.Pointer) uint32

func main() {
	if os.Args[1] == "badfd" {
		var buf [64]byte
		var n uint32
		fmt.Fprintf(os.Stderr, "errno=%d\n", netError(1, unsafe.Pointer(&buf[0]), 64, unsafe.Pointer(&n)))
		return
	}
	req := []byte(os.Args[1])
	var out [512]byte
	errno := netConnect(unsafe.Pointer(unsafe.SliceData(req)), uint32(len(req)), unsafe.Pointer(&out[0]), uint32(len(out)))
	fmt.Fprintf(os.Stderr, "errno=%d\n", errno)
	if errno == 76 {
		n := binary.LittleEndian.Uint32(out[4:])
		fmt.Fprintf(os.Stderr, "kind=%d msg=%s\n", binary.LittleEndian.Uint32(out[0:]), out[8:8+n])
		os.Exit(1)
	}
	if errno != 0 {
		os.Exit(2)
	}
	rfd, wfd := binary.LittleEndian.Uint32(out[0:]), binary.LittleEndian.Uint32(out[4:])
	r, w := os.NewFile(uintptr(rfd), "r"), os.NewFile(uintptr(wfd), "w")
	if len(os.Args) > 2 {
		io.WriteString(w, os.Args[2])
	}
	if len(os.Args) > 3 && os.Args[3] == "close" {
		w.Close()
	}
	io.Copy(os.Stdout, r)
	var buf [1024]byte
	var n uint32
	netError(rfd, unsafe.Pointer(&buf[0]), uint32(len(buf)), unsafe.Pointer(&n))
	fmt.Fprintf(os.Stderr, "net_error=%s\n", buf[:n])
}
