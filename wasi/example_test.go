package wasi_test

import (
	"fmt"
	"io"

	experimentalsys "github.com/wasmbox/wasmbox/third_party/wazero/experimental/sys"

	"github.com/wasmbox/wasmbox/vfs"
	"github.com/wasmbox/wasmbox/wasi"
)

// NewFS turns vfs errors into the errno a WASI guest sees, and paths
// relative to the mount into vfs paths.
func ExampleNewFS() {
	fsys := vfs.NewMemFS()
	guest := wasi.NewFS(fsys)

	f, errno := guest.OpenFile("notes.txt", experimentalsys.O_CREAT|experimentalsys.O_WRONLY, 0o644)
	fmt.Println("create:", errno)
	f.Write([]byte("hello"))
	f.Close()

	_, errno = guest.OpenFile("notes.txt/x", experimentalsys.O_RDONLY, 0)
	fmt.Println("open notes.txt/x:", errno)
	fmt.Println("rmdir notes.txt:", guest.Rmdir("notes.txt"))
	fmt.Println("symlink to /etc:", guest.Symlink("/etc", "etc"))

	// The host sees the same file at the vfs root.
	h, _ := fsys.Open("/notes.txt")
	b, _ := io.ReadAll(h)
	fmt.Printf("host reads %q\n", b)
	// Output:
	// create: success
	// open notes.txt/x: not a directory or a symbolic link to a directory
	// rmdir notes.txt: not a directory or a symbolic link to a directory
	// symlink to /etc: operation not permitted
	// host reads "hello"
}
