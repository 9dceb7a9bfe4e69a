package preview1_test

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"syscall"
	"testing"

	experimentalsys "github.com/wasmbox/wasmbox/third_party/wazero/experimental/sys"

	"github.com/wasmbox/wasmbox/vfs"
	"github.com/wasmbox/wasmbox/wasi/preview1"
)

func TestErrnoOf(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want preview1.Errno
	}{
		{nil, preview1.ErrnoSuccess},
		{&os.PathError{Op: "write", Path: "/f", Err: syscall.ENOSPC}, preview1.ErrnoNospc},
		{&os.PathError{Op: "write", Path: "/f", Err: syscall.EFBIG}, preview1.ErrnoFbig},
		{&os.LinkError{Op: "rename", Old: "/a", New: "/b", Err: syscall.EXDEV}, preview1.ErrnoXdev},
		{&os.PathError{Op: "open", Path: "/f", Err: syscall.EROFS}, preview1.ErrnoRofs},
		{&os.PathError{Op: "open", Path: "/f", Err: syscall.ELOOP}, preview1.ErrnoLoop},
		{&os.PathError{Op: "rmdir", Path: "/d", Err: syscall.ENOTEMPTY}, preview1.ErrnoNotempty},
		{&os.PathError{Op: "open", Path: "/f", Err: syscall.ENAMETOOLONG}, preview1.ErrnoNametoolong},
		{&os.PathError{Op: "open", Path: "/f", Err: syscall.EACCES}, preview1.ErrnoAcces},
		{&os.PathError{Op: "open", Path: "/f", Err: syscall.EPERM}, preview1.ErrnoPerm},
		{&os.PathError{Op: "link", Path: "/f", Err: syscall.EMLINK}, preview1.ErrnoMlink},
		{&os.PathError{Op: "x", Path: "/f", Err: syscall.EOPNOTSUPP}, preview1.ErrnoNotsup},
		{fs.ErrNotExist, preview1.ErrnoNoent},
		{experimentalsys.EISDIR, preview1.ErrnoIsdir},
		{fmt.Errorf("wrapped: %w", preview1.ErrnoNotcapable), preview1.ErrnoNotcapable},
		{errors.New("mystery"), preview1.ErrnoIo},
	} {
		if got := preview1.ErrnoOf(tc.err); got != tc.want {
			t.Errorf("ErrnoOf(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
	// What a real quota error of the vfs becomes.
	fsys := vfs.NewMemFS(vfs.WithQuota(vfs.Quota{Bytes: 4}))
	f, err := fsys.Create("/f")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	_, err = f.Write([]byte("too long"))
	if got := preview1.ErrnoOf(err); got != preview1.ErrnoNospc {
		t.Errorf("quota write: %v -> %v", err, got)
	}
	if !errors.Is(fmt.Errorf("x: %w", preview1.ErrnoNospc), preview1.ErrnoNospc) {
		t.Error("errors.Is on a wrapped Errno")
	}
}

func ExampleErrnoOf() {
	err := &os.PathError{Op: "write", Path: "/tmp/out", Err: syscall.ENOSPC}
	e := preview1.ErrnoOf(err)
	fmt.Println(uint16(e), e)
	// Output: 51 ENOSPC
}
