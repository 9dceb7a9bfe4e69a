package vfs_test

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"

	"github.com/wasmbox/wasmbox/vfs"
)

func ExampleNewDefault() {
	v, err := vfs.NewDefault()
	if err != nil {
		panic(err)
	}
	f, _ := v.Create("/home/user/notes.txt")
	f.Write([]byte("hello\n"))
	f.Close()

	fi, _ := v.Stat("/home/user/notes.txt")
	st := fi.Sys().(*vfs.Stat)
	fmt.Println(fi.Size(), fi.Mode(), st.Uid, st.Nlink)

	// Errors are *os.PathError wrapping a syscall.Errno.
	err = v.Mkdir("/home/user/a/b", 0o755)
	fmt.Println(errors.Is(err, syscall.ENOENT), err)
	// Output:
	// 6 -rw-r--r-- 1000 1
	// true mkdir /home/user/a/b: no such file or directory
}

func ExampleVFS_Mount() {
	v := vfs.New(vfs.NewMemFS())
	data := vfs.NewMemFS()
	f, _ := data.Create("/report.txt")
	f.Write([]byte("42"))
	f.Close()

	v.Mount("/mnt/data", data)
	// A symlink in one filesystem may point into another: resolution
	// happens over the whole namespace.
	v.SymlinkIfPossible("/mnt/data/report.txt", "/latest")
	b, _ := fs.ReadFile(vfs.IOFS(v), "latest")
	fmt.Println(string(b))

	// Renames cannot cross filesystems.
	err := v.Rename("/latest", "/mnt/data/latest")
	fmt.Println(errors.Is(err, syscall.EXDEV))
	// Output:
	// 42
	// true
}

func ExampleMemFS_Fork() {
	m := vfs.NewMemFS()
	f, _ := m.Create("/f")
	f.Write([]byte("parent"))
	f.Close()

	child := m.Fork() // contents shared copy-on-write
	g, _ := child.OpenFile("/f", os.O_WRONLY|os.O_APPEND, 0)
	g.Write([]byte("+child"))
	g.Close()

	for _, fsys := range []vfs.FS{m, child} {
		h, _ := fsys.Open("/f")
		b, _ := io.ReadAll(h)
		h.Close()
		fmt.Println(string(b))
	}
	// Output:
	// parent
	// parent+child
}

func ExampleWithQuota() {
	m := vfs.NewMemFS(vfs.WithQuota(vfs.Quota{Bytes: 8}))
	f, _ := m.Create("/f")
	defer f.Close()
	n, err := f.Write([]byte("12345"))
	fmt.Println(n, err)
	// A write that would cross the limit writes what fits (a short
	// write, as on a full disk); the next one writes nothing.
	n, err = f.Write([]byte("6789"))
	fmt.Println(n, errors.Is(err, syscall.ENOSPC))
	n, err = f.Write([]byte("9"))
	fmt.Println(n, errors.Is(err, syscall.ENOSPC))
	// Output:
	// 5 <nil>
	// 3 true
	// 0 true
}

func ExampleIOFS() {
	v := vfs.New(vfs.NewMemFS())
	v.MkdirAll("/src/pkg", 0o755)
	for _, name := range []string{"/src/main.go", "/src/pkg/util.go"} {
		f, _ := v.Create(name)
		f.Close()
	}
	fs.WalkDir(vfs.IOFS(v), "src", func(p string, d fs.DirEntry, err error) error {
		fmt.Println(p, d.IsDir())
		return err
	})
	// Output:
	// src true
	// src/main.go false
	// src/pkg true
	// src/pkg/util.go false
}

func ExampleParseMountSpec() {
	spec, err := vfs.ParseMountSpec("/home/me/project:/work:cow")
	fmt.Println(spec.Host, spec.Guest, spec.Mode, err)
	_, err = vfs.ParseMountSpec("/src:relative")
	fmt.Println(errors.Is(err, vfs.ErrBadMountSpec))
	// Output:
	// /home/me/project /work cow <nil>
	// true
}
