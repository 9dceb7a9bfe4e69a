package sandbox

import (
	"context"
	"fmt"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/wasmbox/wasmbox/vfs"
)

// TestBigFileFillsQuota: a guest streaming 1 GiB into a file fills the
// default 256 MiB quota and gets "No space left on device" quickly, the
// file keeps what fit (the quota minus what the layout uses), and the host
// grows by about the file, not by gigabytes. On the code before, each
// write past 64 MiB copied the whole file: `head -c 200M /dev/zero > f`
// ran past a 20 s timeout and grew the host by 1.9 GB without reaching
// the quota.
func TestBigFileFillsQuota(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 256 MiB")
	}
	const deadline = 30 * time.Second // the write takes about a second; the deadline stops a regression
	sb := newSandbox(t, WithTimeout(deadline))
	run(t, sb, `cd /tmp`)
	debug.FreeOSMemory()
	stop := rssWatch(t, 2048<<20)
	start := time.Now()
	res, err := sb.Run(context.Background(), `head -c 1G /dev/zero > f; echo "status $?"`)
	took := time.Since(start)
	grew := stop()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("exit %d %s after %v, host RSS +%d MiB; stdout %q stderr %.200q", res.ExitCode, res.ErrorClass, took.Round(time.Millisecond), grew>>20, res.Stdout, res.Stderr)
	wantStatus(t, res, 0, ClassNone)
	wantContains(t, res.Stderr, "No space left on device")
	wantEqual(t, res.Stdout, "status 1\n")
	// The host holds the file (256 MiB, plus the garbage of its growth until
	// the collector runs), never gigabytes.
	if grew > 1024<<20 {
		t.Errorf("the host's RSS grew by %d MiB writing a 256 MiB file", grew>>20)
	}

	// (stat, not wc -c: the tool reads the 256 MiB it counts, 3 to 10 s
	// here.)
	res = run(t, sb, `stat -c %s f`)
	wantStatus(t, res, 0, ClassNone)
	size, err := strconv.ParseInt(strings.TrimSpace(res.Stdout), 10, 64)
	if err != nil {
		t.Fatalf("stat -c %%s f: %q %q", res.Stdout, res.Stderr)
	}
	// The file got the quota but for what the rest of the in-memory
	// filesystem holds.
	var mem *vfs.MemFS
	for _, mp := range sb.fs.Mounts() {
		if m, ok := mp.FS.(*vfs.MemFS); ok && mp.Path == "/" {
			mem = m
		}
	}
	if mem == nil {
		t.Fatalf("no MemFS at / in %v", sb.fs.Mounts())
	}
	if used, _ := mem.Usage(); used != vfs.DefaultQuotaBytes {
		t.Errorf("usage %d, want the quota %d", used, vfs.DefaultQuotaBytes)
	}
	if size < vfs.DefaultQuotaBytes-1<<20 {
		t.Errorf("the file kept %d bytes, want the quota %d minus the few bytes of the rest", size, vfs.DefaultQuotaBytes)
	}
	// Full: an append fails and changes nothing. (Not with the echo
	// builtin: it drops write errors silently, a shell matter of its own.)
	res = run(t, sb, `head -c 1 /dev/zero >> f; echo "append $?"`)
	wantEqual(t, res.Stdout, "append 1\n")
	wantContains(t, res.Stderr, "No space left on device")
	if fi, err := sb.fs.Stat("/tmp/f"); err != nil || fi.Size() != size {
		t.Errorf("after the append: %v %v, want %d bytes", fi, err, size)
	}
	// Removing the file gives the space back.
	res = run(t, sb, `rm f && head -c 1M /dev/zero > g && wc -c < g`)
	wantEqual(t, res.Stdout, fmt.Sprintln(1<<20))
}
