package engine

import (
	"os"
	"path/filepath"
	"strconv"
)

// DirPath is the directory of this user's engine sockets, without making
// it: $XDG_RUNTIME_DIR/wasmbox, else $TMPDIR/wasmbox-UID. Dir makes and
// checks it; the CLI refuses mounts that cover it on every system.
func DirPath() string {
	if x := os.Getenv("XDG_RUNTIME_DIR"); filepath.IsAbs(x) {
		return filepath.Join(x, "wasmbox")
	}
	return filepath.Join(os.TempDir(), "wasmbox-"+strconv.Itoa(os.Geteuid()))
}
