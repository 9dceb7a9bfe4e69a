package sandbox

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
	"time"
)

// partsSnapshot is what SnapshotParts says the snapshot is: its parts'
// bytes and the trailer. It checks each part on the way.
func partsSnapshot(t *testing.T, parts []SnapshotPart) []byte {
	t.Helper()
	var b []byte
	for i, p := range parts {
		if len(p.Data) == 0 || len(p.Data) > maxPart {
			t.Fatalf("part %d of %d bytes", i, len(p.Data))
		}
		if sha256.Sum256(p.Data) != p.Sum {
			t.Fatalf("part %d: sum does not match its bytes", i)
		}
		b = append(b, p.Data...)
	}
	sum := sha256.Sum256(b)
	return append(b, sum[:]...)
}

// checkParts compares the incremental snapshot with the full one
// (Snapshot, a separate encoder), byte for byte, and checks that the
// parts handed out before have not changed since (they are shared with
// the files copy-on-write).
func checkParts(t *testing.T, sb *Sandbox, step string, kept *[]SnapshotPart) {
	t.Helper()
	for i, p := range *kept {
		if sha256.Sum256(p.Data) != p.Sum {
			t.Fatalf("%s: a part handed out earlier (%d) changed under its holder", step, i)
		}
	}
	parts, err := sb.SnapshotParts()
	if err != nil {
		t.Fatalf("%s: SnapshotParts: %v", step, err)
	}
	var full bytes.Buffer
	if err := sb.Snapshot(&full); err != nil {
		t.Fatalf("%s: Snapshot: %v", step, err)
	}
	if got := partsSnapshot(t, parts); !bytes.Equal(got, full.Bytes()) {
		t.Fatalf("%s: incremental snapshot (%d bytes) differs from the full one (%d bytes) at byte %d", step, len(got), full.Len(), firstDiff(got, full.Bytes()))
	}
	*kept = append((*kept)[:0], parts...)
}

func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// snapOps applies random filesystem operations to sb, through the host
// API and the shell, including the ones that change a file behind a
// snapshot's back: writes in place, through a hard link, with the
// modification time put back; truncates to the same size; renames over
// a file; a file replaced by a directory and by a symlink.
type snapOps struct {
	t   *testing.T
	sb  *Sandbox
	rng *rand.Rand
}

var opNames = []string{"a", "b", "c", "big", "d/x", "d/y", "d/e/z", "l"}

func (o *snapOps) path() string {
	return "/home/user/t/" + opNames[o.rng.IntN(len(opNames))]
}

func (o *snapOps) data() []byte {
	var n int
	switch o.rng.IntN(4) {
	case 0:
		n = o.rng.IntN(100)
	case 1:
		n = o.rng.IntN(bigPart + 100)
	default:
		n = bigPart + o.rng.IntN(200<<10)
	}
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(o.rng.Uint32())
	}
	return b
}

// step applies one operation and names it; errors of the operation
// itself (a missing file, a directory in the way) are part of the game.
func (o *snapOps) step() string {
	fsys := o.sb.FS()
	p, q := o.path(), o.path()
	fsys.MkdirAll("/home/user/t/d/e", 0o755)
	switch o.rng.IntN(17) {
	case 0, 1:
		o.sb.WriteFile(p, o.data(), 0o644)
		return "write " + p
	case 2:
		f, err := fsys.OpenFile(p, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
		if err == nil {
			d := o.data()
			f.Write(d[:min(len(d), o.rng.IntN(64))])
			f.Close()
		}
		return "append " + p
	case 3:
		// In place, the time put back: only the content says it changed.
		fi, err := fsys.Stat(p)
		f, err2 := fsys.OpenFile(p, os.O_WRONLY, 0)
		if err == nil && err2 == nil && fi.Size() > 0 {
			f.WriteAt([]byte{byte(o.rng.Uint32()), 1, 2}, o.rng.Int64N(fi.Size()))
		}
		if err2 == nil {
			f.Close()
		}
		if err == nil {
			fsys.Chtimes(p, fi.ModTime(), fi.ModTime())
		}
		return "write in place " + p
	case 4:
		fi, err := fsys.Stat(p)
		if err == nil {
			size := fi.Size()
			switch o.rng.IntN(3) {
			case 0:
				size /= 2
			case 1:
				size += int64(o.rng.IntN(bigPart * 2))
			}
			if f, err := fsys.OpenFile(p, os.O_WRONLY, 0); err == nil {
				f.Truncate(size)
				f.Close()
			}
		}
		return "truncate " + p
	case 5:
		fsys.Rename(p, q)
		return "rename " + p + " " + q
	case 6:
		fsys.Remove(p)
		return "remove " + p
	case 7:
		fsys.RemoveAll("/home/user/t/d")
		return "rm -r d"
	case 8:
		fsys.Chmod(p, fs.FileMode(o.rng.IntN(0o777)))
		return "chmod " + p
	case 9:
		t := time.Unix(o.rng.Int64N(2e9), o.rng.Int64N(1e9))
		fsys.Chtimes(p, t, t)
		return "chtimes " + p
	case 10:
		fsys.(interface{ Link(string, string) error }).Link(p, q)
		return "link " + p + " " + q
	case 11:
		o.sb.fs.SymlinkIfPossible(strings.TrimPrefix(q, "/home/user/t/"), p)
		return "symlink " + p
	case 12:
		fsys.Mkdir(p, 0o755)
		return "mkdir " + p
	case 13:
		// The same bytes written again: the content is equal, its copy
		// is not.
		if b, err := o.sb.ReadFile(p); err == nil {
			o.sb.WriteFile(p, b, 0o644)
		}
		return "rewrite " + p
	case 14:
		// Through the shell: its state and a file.
		script := fmt.Sprintf("v%d=%d; cd /home/user/t; echo $v%d >> %s 2>/dev/null; true", o.rng.IntN(3), o.rng.IntN(1000), o.rng.IntN(3), opNames[o.rng.IntN(3)])
		if _, err := o.sb.Run(context.Background(), script); err != nil {
			o.t.Fatalf("run %q: %v", script, err)
		}
		return "run " + script
	case 15:
		// GNU bash's memory: a large value (malloc grows the heap and
		// the memory, dirtying regions far apart), one freed, an array,
		// a function, the working directory.
		n := o.rng.IntN(4)
		var script string
		switch o.rng.IntN(5) {
		case 0:
			script = fmt.Sprintf("big%d=$(printf '%%*s' %d x)", n, o.rng.IntN(300000))
		case 1:
			script = fmt.Sprintf("unset big%d arr%d", n, n)
		case 2:
			script = fmt.Sprintf("arr%d+=({1..%d})", n, o.rng.IntN(3000))
		case 3:
			script = fmt.Sprintf("f%d() { echo %d; }", n, o.rng.IntN(1000))
		default:
			script = []string{"cd /tmp", "cd /home/user/t", "cd"}[n%3]
		}
		if _, err := o.sb.Run(context.Background(), script); err != nil {
			o.t.Fatalf("run %q: %v", script, err)
		}
		return "run " + script
	default:
		return "nothing"
	}
}

// TestSnapshotPartsEqualFull: over random sequences of operations, the
// incremental snapshot is byte for byte the full one after every step,
// and no part handed out changes afterwards. The sessions are GNU bash's:
// their 'B' record (bash's memory by region, the regions a run did not
// dirty kept from the last snapshot) is checked against the whole
// encoding, over runs that grow, dirty and free bash's memory, and over
// restores.
func TestSnapshotPartsEqualFull(t *testing.T) {
	seeds := 4
	steps := 60
	if testing.Short() {
		seeds, steps = 2, 30
	}
	for seed := range seeds {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			runSnapOps(t, uint64(seed), steps)
		})
	}
}

func runSnapOps(t *testing.T, seed uint64, steps int) {
	ctx := context.Background()
	sb, err := New(ctx, WithShell(ShellBash))
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Close()
	o := &snapOps{t: t, sb: sb, rng: rand.New(rand.NewPCG(seed, 7))}
	var kept []SnapshotPart
	checkParts(t, sb, "start", &kept)
	var log []string
	for i := range steps {
		log = append(log, o.step())
		if o.rng.IntN(3) > 0 || i == steps-1 {
			checkParts(t, sb, fmt.Sprintf("seed %d step %d (%s)", seed, i, strings.Join(log, "; ")), &kept)
			log = log[:0]
		}
		if o.rng.IntN(25) == 0 {
			// Restored from its own snapshot: the same bytes again.
			var full bytes.Buffer
			if err := sb.Snapshot(&full); err != nil {
				t.Fatal(err)
			}
			if err := sb.Restore(bytes.NewReader(full.Bytes())); err != nil {
				t.Fatal(err)
			}
			parts, err := sb.SnapshotParts()
			if err != nil {
				t.Fatal(err)
			}
			if got := partsSnapshot(t, parts); !bytes.Equal(got, full.Bytes()) {
				t.Fatalf("seed %d step %d: after a restore the parts differ from the snapshot restored", seed, i)
			}
		}
	}
}

// FuzzSnapshotParts drives the same operations from the fuzzer's seed.
func FuzzSnapshotParts(f *testing.F) {
	f.Add(uint64(100), uint8(20))
	f.Add(uint64(101), uint8(40))
	f.Fuzz(func(t *testing.T, seed uint64, steps uint8) {
		runSnapOps(t, seed, int(steps%64))
	})
}

// TestSnapshotPartsReused: the parts of a large file that did not change
// are the same bytes handed out again (not read or hashed anew), and a
// change to it, even in place with its time put back, gives new ones.
func TestSnapshotPartsReused(t *testing.T) {
	ctx := context.Background()
	sb, err := New(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Close()
	big := bytes.Repeat([]byte("0123456789abcdef"), 64<<10) // 1 MiB
	if err := sb.WriteFile("/home/user/big", big, 0o644); err != nil {
		t.Fatal(err)
	}
	first := func(parts []SnapshotPart) map[*byte]bool {
		m := map[*byte]bool{}
		for _, p := range parts {
			m[&p.Data[0]] = true
		}
		return m
	}
	a, err := sb.SnapshotParts()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sb.Run(ctx, "echo 1 > /home/user/counter"); err != nil {
		t.Fatal(err)
	}
	b, err := sb.SnapshotParts()
	if err != nil {
		t.Fatal(err)
	}
	fa := first(a)
	reused := 0
	for _, p := range b {
		if fa[&p.Data[0]] {
			reused++
		}
	}
	if reused < 16 { // 1 MiB is at least 16 parts of at most 64 KiB
		t.Fatalf("%d of %d parts reused after a run that did not touch the large file", reused, len(b))
	}
	fi, err := sb.FS().Stat("/home/user/big")
	if err != nil {
		t.Fatal(err)
	}
	f, err := sb.FS().OpenFile("/home/user/big", os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	mark := []byte("\x00in-place mark\x00")
	f.WriteAt(mark, 500<<10)
	f.Close()
	sb.FS().Chtimes("/home/user/big", fi.ModTime(), fi.ModTime())
	c, err := sb.SnapshotParts()
	if err != nil {
		t.Fatal(err)
	}
	fb := first(b)
	for _, p := range c {
		if fb[&p.Data[0]] && bytes.Contains(p.Data, mark) {
			t.Fatal("a part changed in place")
		}
	}
	var full bytes.Buffer
	if err := sb.Snapshot(&full); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(partsSnapshot(t, c), full.Bytes()) {
		t.Fatal("after a write in place the parts differ from the full snapshot")
	}
}

// TestSnapshotPartsBash: with GNU bash as the shell, the snapshot's 'B'
// record (bash's memory image) is laid out in parts too, and the parts
// are still the full snapshot byte for byte.
func TestSnapshotPartsBash(t *testing.T) {
	ctx := context.Background()
	sb, err := New(ctx, WithShell(ShellBash))
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Close()
	var kept []SnapshotPart
	for i, script := range []string{"true", "x=1; echo $x > /home/user/f", "cd /tmp; y=$((x+41)); head -c 20000 /dev/zero > z"} {
		if _, err := sb.Run(ctx, script); err != nil {
			t.Fatal(err)
		}
		checkParts(t, sb, fmt.Sprintf("bash run %d", i), &kept)
	}
}

// TestSnapshotPartsBashIncremental: a run that only sets a variable
// changes the snapshot (the variable lives in bash's memory: the session
// must be committed), but only a few of its parts: the regions of bash's
// memory the run did not dirty keep their parts, so that most of the
// bytes are the last snapshot's, not encoded or hashed again. Restored
// from those parts, the variable is there.
func TestSnapshotPartsBashIncremental(t *testing.T) {
	ctx := context.Background()
	sb, err := New(ctx, WithShell(ShellBash))
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Close()
	if _, err := sb.Run(ctx, "true"); err != nil {
		t.Fatal(err)
	}
	a, err := sb.SnapshotParts()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sb.Run(ctx, "x=42"); err != nil {
		t.Fatal(err)
	}
	b, err := sb.SnapshotParts()
	if err != nil {
		t.Fatal(err)
	}
	old := map[*byte]bool{}
	for _, p := range a {
		old[&p.Data[0]] = true
	}
	total, fresh := 0, 0
	for _, p := range b {
		total += len(p.Data)
		if !old[&p.Data[0]] {
			fresh += len(p.Data)
		}
	}
	if fresh == 0 {
		t.Fatal("a run that set a variable left the parts as they were: it would not be committed")
	}
	if fresh*4 > total {
		t.Fatalf("a run that set a variable made %d of the snapshot's %d bytes of parts anew; want at most a quarter", fresh, total)
	}
	snap := partsSnapshot(t, b)
	rs, err := New(ctx, WithShell(ShellBash))
	if err != nil {
		t.Fatal(err)
	}
	defer rs.Close()
	if err := rs.Restore(bytes.NewReader(snap)); err != nil {
		t.Fatal(err)
	}
	res, err := rs.Run(ctx, "echo $x")
	if err != nil || res.Stdout != "42\n" {
		t.Fatalf("restored from the parts: %q, %v", res.Stdout, err)
	}
}
