// Command probe is the Go wasip1 guest of the preview1 tests: one
// subcommand per scenario, output compared by the tests.
package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"syscall"
	"time"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: probe CMD")
		os.Exit(2)
	}
	switch os.Args[1] {
	case "files":
		files()
	case "cat":
		if _, err := io.Copy(os.Stdout, os.Stdin); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	case "pollcat":
		// A non-blocking stdin: Go reads it through its netpoller, which
		// waits in poll_oneoff with an fd_read subscription.
		if err := syscall.SetNonblock(0, true); err != nil {
			fmt.Fprintln(os.Stderr, "setnonblock:", err)
			os.Exit(1)
		}
		in := os.NewFile(0, "stdin")
		if _, err := io.Copy(os.Stdout, in); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	case "fill":
		f, err := os.Create(os.Args[2])
		if err != nil {
			fmt.Println(err)
			os.Exit(1)
		}
		buf := bytes.Repeat([]byte("x"), 64<<10)
		total := 0
		for {
			n, err := f.Write(buf)
			total += n
			if err != nil {
				fmt.Println(err)
				fmt.Println("wrote", total)
				os.Exit(1)
			}
		}
	case "sleep":
		d, _ := time.ParseDuration(os.Args[2])
		time.Sleep(d)
		fmt.Println("slept")
	case "env":
		fmt.Println(strings.Join(os.Args[2:], ","), os.Getenv("GREETING"))
	case "faults":
		faults()
	case "exit":
		os.Exit(7)
	case "write":
		// write SIZE: SIZE bytes to stdout in 32 KiB writes.
		var n int
		fmt.Sscan(os.Args[2], &n)
		buf := bytes.Repeat([]byte("y"), 32<<10)
		for n > 0 {
			c := min(n, len(buf))
			if _, err := os.Stdout.Write(buf[:c]); err != nil {
				os.Exit(3)
			}
			n -= c
		}
	case "read":
		// read: count stdin bytes.
		n, err := io.Copy(io.Discard, os.Stdin)
		if err != nil {
			os.Exit(3)
		}
		fmt.Println(n)
	default:
		fmt.Fprintln(os.Stderr, "unknown", os.Args[1])
		os.Exit(2)
	}
}

func check(err error) {
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
}

func files() {
	check(os.MkdirAll("/work/sub", 0o755))
	check(os.WriteFile("/work/a.txt", []byte("hello\n"), 0o644))
	f, err := os.OpenFile("/work/a.txt", os.O_APPEND|os.O_WRONLY, 0)
	check(err)
	_, err = f.WriteString("world\n")
	check(err)
	check(f.Close())
	b, err := os.ReadFile("/work/a.txt")
	check(err)
	fmt.Printf("read %q\n", b)

	check(os.Rename("/work/a.txt", "/work/sub/b.txt"))
	_, err = os.Stat("/work/a.txt")
	fmt.Println("old name gone:", os.IsNotExist(err))
	check(os.Symlink("sub/b.txt", "/work/link"))
	target, err := os.Readlink("/work/link")
	check(err)
	b, err = os.ReadFile("/work/link")
	check(err)
	fmt.Printf("symlink -> %s: %q\n", target, b)
	check(os.Link("/work/sub/b.txt", "/work/hard"))
	st, err := os.Stat("/work/hard")
	check(err)
	fmt.Println("hard link size", st.Size())
	lst, err := os.Lstat("/work/link")
	check(err)
	fmt.Println("lstat symlink:", lst.Mode()&os.ModeSymlink != 0)

	for i := 0; i < 50; i++ {
		check(os.WriteFile(fmt.Sprintf("/work/sub/f%02d", i), nil, 0o644))
	}
	ents, err := os.ReadDir("/work/sub")
	check(err)
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	sort.Strings(names)
	fmt.Println("readdir", len(names), names[0], names[len(names)-1])

	_, err = os.ReadFile("/work/missing")
	fmt.Println("missing:", err)
	err = os.Remove("/work/sub")
	fmt.Println("rmdir non-empty:", err)
	check(os.RemoveAll("/work/sub"))
	_, err = os.Stat("/work/sub")
	fmt.Println("removed:", os.IsNotExist(err))
	err = os.Mkdir("/work/hard/x", 0o755)
	fmt.Println("mkdir under file:", err)

	// Seek and positional I/O.
	f, err = os.Create("/work/seek")
	check(err)
	_, err = f.WriteAt([]byte("0123456789"), 0)
	check(err)
	off, err := f.Seek(-3, io.SeekEnd)
	check(err)
	buf := make([]byte, 3)
	_, err = io.ReadFull(f, buf)
	fmt.Printf("seek %d read %q err %v\n", off, buf, err)
	check(f.Truncate(4))
	st, err = f.Stat()
	check(err)
	fmt.Println("truncated", st.Size())
	check(f.Close())
}

//go:wasmimport wasi_snapshot_preview1 fd_write
func fdWrite(fd int32, iovs, n, nwritten uint32) uint32

//go:wasmimport wasi_snapshot_preview1 fd_read
func fdRead(fd int32, iovs, n, nread uint32) uint32

//go:wasmimport wasi_snapshot_preview1 args_get
func argsGet(argv, buf uint32) uint32

//go:wasmimport wasi_snapshot_preview1 path_open
func pathOpen(fd int32, dirflags uint32, path, pathLen, oflags uint32, base, inh uint64, fdflags uint32, opened uint32) uint32

//go:wasmimport wasi_snapshot_preview1 poll_oneoff
func pollOneoff(in, out, n, nevents uint32) uint32

//go:wasmimport wasi_snapshot_preview1 random_get
func randomGet(buf, n uint32) uint32

//go:wasmimport wasi_snapshot_preview1 fd_prestat_dir_name
func fdPrestatDirName(fd int32, buf, n uint32) uint32

// faults calls host functions with pointers past the end of memory: each
// must answer EFAULT (21) or EINVAL (28), never crash the host.
func faults() {
	const bad = 0xFFFFFFF0
	fmt.Println("fd_write iovs", fdWrite(1, bad, 1, bad))
	fmt.Println("fd_write iovs_len", fdWrite(1, 0, 0x7FFFFFFF, 0))
	fmt.Println("fd_read", fdRead(0, bad, 1, bad))
	fmt.Println("args_get", argsGet(bad, bad))
	fmt.Println("path_open", pathOpen(3, 0, bad, 100, 0, 0, 0, 0, bad))
	fmt.Println("poll_oneoff", pollOneoff(bad, bad, 1, bad))
	fmt.Println("poll_oneoff huge", pollOneoff(0, 0, 0x7FFFFFFF, 0))
	fmt.Println("random_get", randomGet(bad, 64))
	fmt.Println("prestat_dir_name", fdPrestatDirName(3, bad, 1))
	fmt.Println("bad fd", fdWrite(99, 0, 0, 0))
}
