// Command probe is a wasip1 guest for the tests of package wasi. Its first
// argument picks what it does; it writes "ready" to stderr just before it
// starts to block, so a test knows when to cancel.
package main

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"strconv"
	"time"
	"unsafe"
)

//go:wasmimport wasi_snapshot_preview1 poll_oneoff
func pollOneoff(in, out unsafe.Pointer, nsubscriptions uint32, nevents unsafe.Pointer) uint32

// subscription is the wasip1 subscription record (48 bytes).
type subscription struct {
	userdata  uint64
	eventType uint8
	_         [7]byte
	// clock: id u32 (+4 pad), timeout u64, precision u64, flags u16
	// fd_read: fd u32
	u [32]byte
}

// event is the wasip1 event record (32 bytes).
type event struct {
	userdata  uint64
	errno     uint16
	eventType uint8
	_         [5]byte
	_         [16]byte
}

func clockSub(userdata uint64, timeout time.Duration) subscription {
	s := subscription{userdata: userdata, eventType: 0}
	*(*uint32)(unsafe.Pointer(&s.u[0])) = 1 // CLOCK_MONOTONIC
	*(*uint64)(unsafe.Pointer(&s.u[8])) = uint64(timeout)
	return s
}

func fdReadSub(userdata uint64, fd uint32) subscription {
	s := subscription{userdata: userdata, eventType: 1}
	*(*uint32)(unsafe.Pointer(&s.u[0])) = fd
	return s
}

func poll(subs []subscription) ([]event, uint32) {
	out := make([]event, len(subs))
	var n uint32
	errno := pollOneoff(unsafe.Pointer(&subs[0]), unsafe.Pointer(&out[0]), uint32(len(subs)), unsafe.Pointer(&n))
	return out[:n], errno
}

func ready() { os.Stderr.WriteString("ready\n") }

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: probe cat|sleep|pollstdin D|pollclock D|flood N|readfile PATH|writefile PATH N|rand N|clock|stat PATH")
		os.Exit(2)
	}
	switch os.Args[1] {
	case "cat": // blocks in fd_read on stdin
		ready()
		n, err := io.Copy(os.Stdout, os.Stdin)
		fmt.Fprintf(os.Stderr, "copied %d %v\n", n, err)
	case "sleep": // blocks in poll_oneoff (clock) through the Go scheduler
		ready()
		time.Sleep(time.Hour)
		fmt.Println("woke")
	case "pollclock": // poll_oneoff with one relative clock subscription
		d, _ := time.ParseDuration(os.Args[2])
		ready()
		start := time.Now()
		evs, errno := poll([]subscription{clockSub(7, d)})
		fmt.Printf("errno=%d events=%d userdata=%d slept>=%v\n", errno, len(evs), evs[0].userdata, time.Since(start) >= d)
	case "pollstdin": // poll_oneoff on stdin fd_read plus a clock
		d, _ := time.ParseDuration(os.Args[2])
		ready()
		evs, errno := poll([]subscription{fdReadSub(1, 0), clockSub(2, d)})
		fmt.Printf("errno=%d events=%d", errno, len(evs))
		for _, e := range evs {
			fmt.Printf(" [ud=%d type=%d errno=%d]", e.userdata, e.eventType, e.errno)
		}
		fmt.Println()
	case "flood": // writes N bytes to stdout (blocks when nobody reads)
		n, _ := strconv.Atoi(os.Args[2])
		buf := make([]byte, 32<<10)
		ready()
		for n > 0 {
			c := min(n, len(buf))
			if _, err := os.Stdout.Write(buf[:c]); err != nil {
				fmt.Fprintln(os.Stderr, "write:", err)
				os.Exit(1)
			}
			n -= c
		}
	case "readfile": // reads PATH in 32 KiB reads, prints the byte count
		f, err := os.Open(os.Args[2])
		if err != nil {
			fmt.Println("error:", err)
			os.Exit(1)
		}
		buf := make([]byte, 32<<10)
		total := 0
		for {
			n, err := f.Read(buf)
			total += n
			if err == io.EOF {
				break
			}
			if err != nil {
				fmt.Println("error:", err)
				os.Exit(1)
			}
		}
		fmt.Println(total)
	case "writefile": // writes N bytes to PATH in 32 KiB writes
		n, _ := strconv.Atoi(os.Args[3])
		f, err := os.Create(os.Args[2])
		if err != nil {
			fmt.Println("error:", err)
			os.Exit(1)
		}
		buf := make([]byte, 32<<10)
		for n > 0 {
			c := min(n, len(buf))
			if _, err := f.Write(buf[:c]); err != nil {
				fmt.Println("error:", err)
				os.Exit(1)
			}
			n -= c
		}
		if err := f.Close(); err != nil {
			fmt.Println("error:", err)
			os.Exit(1)
		}
	case "rand":
		n, _ := strconv.Atoi(os.Args[2])
		b := make([]byte, n)
		rand.Read(b)
		fmt.Println(hex.EncodeToString(b))
	case "clock":
		t1 := time.Now()
		t2 := time.Now()
		fmt.Println(t1.UTC().Format(time.RFC3339Nano), t2.Sub(t1) > 0)
	case "stat":
		fi, err := os.Stat(os.Args[2])
		if err != nil {
			fmt.Println("error:", err)
			os.Exit(1)
		}
		fmt.Println(fi.Name(), fi.Size(), fi.Mode())
	default:
		fmt.Fprintln(os.Stderr, "unknown mode", os.Args[1])
		os.Exit(2)
	}
}
