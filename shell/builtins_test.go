package shell

import (
	"strings"
	"testing"

	"github.com/wasmbox/wasmbox/vfs"
)

// A builtin's failed write is its failure, as in bash: echo onto a full
// filesystem says so and gives 1 instead of losing the data silently.
func TestBuiltinWriteError(t *testing.T) {
	ts := newTestShell(t, nil)
	m := vfs.NewMemFS(vfs.WithQuota(vfs.Quota{Bytes: 4}))
	if err := ts.fs.(*vfs.VFS).Mount("/full", m); err != nil {
		t.Fatal(err)
	}
	out, errOut, code, err := ts.run(t, `echo 123 > /full/a; echo "s=$?"; echo 4567 >> /full/a; echo "s=$?"; printf 'xyz' >> /full/a; echo "s=$?"`)
	if err != nil || code != 0 {
		t.Fatal(err, code)
	}
	if out != "s=0\ns=1\ns=1\n" || !strings.Contains(errOut, "echo: write error: No space left on device") || !strings.Contains(errOut, "printf: write error") {
		t.Fatalf("stdout %q stderr %q", out, errOut)
	}
}
