package bashsession_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/wasmbox/wasmbox/runtime"
	"github.com/wasmbox/wasmbox/shell/bashsession"
	"github.com/wasmbox/wasmbox/wasi/preview1"
)

// imageMemfds counts the descriptors of this process and the lines of its
// /proc/self/maps that are memory images' memfds (runtime's
// "wasmbox-image").
func imageMemfds(t *testing.T) (fds, maps int) {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("no /proc/self/fd: %v", err)
	}
	for _, e := range ents {
		if l, err := os.Readlink(filepath.Join("/proc/self/fd", e.Name())); err == nil && strings.Contains(l, "memfd:wasmbox-image") {
			fds++
		}
	}
	b, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		t.Skipf("no /proc/self/maps: %v", err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if strings.Contains(l, "memfd:wasmbox-image") {
			maps++
		}
	}
	return fds, maps
}

// TestImagesLeaveNothing: sessions that fork, are killed and come back
// from their image, and run pipelines, leave no memfd, no mapping, no
// instance and no budget reservation behind once closed; while they live,
// their images are mapped (so the count sees what it counts).
func TestImagesLeaveNothing(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	warm := e.session(t)
	run(t, warm, `echo a b | tr a-z A-Z | cat`) // the tools' snapshots are made (and kept)
	warm.Close()
	fds0, maps0 := imageMemfds(t)
	live0, used0 := e.rt.LiveInstances(), e.rt.Budget().Used()
	const n = 4
	var all []*bashsession.Session
	for i := 0; i < n; i++ {
		cfg := e.config(t)
		s, err := bashsession.New(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, s)
		run(t, s, "x="+strconv.Itoa(i))
		c, err := s.ForkBudget(ctx, cfg.FS, cfg.Spawner, nil)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, c)
		if out, _, _ := run(t, c, `echo "$x"; echo a b | tr a-z A-Z | cat`); out != strconv.Itoa(i)+"\nA B\n" {
			t.Fatalf("fork %d: %q", i, out)
		}
		// A killed run: the next one starts from the image (the
		// deadline is a watchdog for the busy loop).
		if _, _, res := runFor(t, s, `x=killed; while :; do :; done`, 200*time.Millisecond); res.Code != 124 {
			t.Fatalf("killed run: %+v", res)
		}
		if out, _, _ := run(t, s, `echo "$x"`); out != strconv.Itoa(i)+"\n" {
			t.Fatalf("after the kill %d: %q", i, out)
		}
	}
	// Every session here runs in an instance mapped from an image (the
	// fork's, the one after the kill); the images themselves were let go
	// by the runs after (their memfds closed, the mappings stay).
	if _, maps := imageMemfds(t); maps < maps0+len(all) {
		t.Fatalf("with %d live sessions from images: %d image mappings (before: %d); the count does not see them", len(all), maps, maps0)
	}
	// A held image keeps its memfd.
	c, err := all[0].ForkBudget(ctx, e.config(t).FS, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	all = append(all, c)
	if fds, _ := imageMemfds(t); fds <= fds0 {
		t.Fatalf("a forked session's image: %d memfds (before: %d)", fds, fds0)
	}
	for _, s := range all {
		s.Close()
	}
	if fds, maps := imageMemfds(t); fds != fds0 || maps != maps0 {
		t.Errorf("after Close: %d image memfds and %d mappings, want %d and %d", fds, maps, fds0, maps0)
	}
	if live := e.rt.LiveInstances(); live != live0 {
		t.Errorf("after Close: %d live instances, want %d", live, live0)
	}
	if used := e.rt.Budget().Used(); used != used0 {
		t.Errorf("after Close: the runtime's budget holds %d bytes, want %d", used, used0)
	}
}

// TestFreshImage: an instance of bash.wasm started from the module's fresh
// image has exactly the memory and stack pointer of one Instantiate makes
// (its data segments, zeros elsewhere), and two sessions started from it
// share nothing.
func TestFreshImage(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	fresh, err := e.rt.FreshImage(ctx, e.bash)
	if err != nil {
		t.Fatal(err)
	}
	if again, _ := e.rt.FreshImage(ctx, e.bash); again != fresh {
		t.Error("FreshImage made a second image")
	}
	memOf := func(in *runtime.Instance) []byte {
		t.Helper()
		img, err := in.MemoryImage(0)
		if err != nil {
			t.Fatal(err)
		}
		if img.StackPointer() != fresh.StackPointer() {
			t.Errorf("stack pointer %#x, the fresh image's %#x", img.StackPointer(), fresh.StackPointer())
		}
		return img.Bytes()
	}
	newState := func() *preview1.State {
		st, err := preview1.NewState(preview1.Config{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		return st
	}
	plain, err := e.rt.Instantiate(ctx, e.bash, runtime.InstanceOptions{WASI: newState()})
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close(ctx)
	mapped, err := e.rt.InstantiateImage(ctx, e.bash, fresh, runtime.InstanceOptions{WASI: newState()})
	if err != nil {
		t.Fatal(err)
	}
	defer mapped.Close(ctx)
	if a, b := memOf(plain), memOf(mapped); !bytes.Equal(a, b) {
		t.Fatalf("the instance from the fresh image differs from a new one (%d and %d bytes)", len(a), len(b))
	}

	// Two sessions: what one sets, the other does not see; each has its
	// own seed of $RANDOM (bash seeds it at its start, from the session's
	// clock and random source).
	s1, s2 := e.session(t), e.session(t)
	run(t, s1, `x=one; f() { echo f1; }; cd /tmp; export E=1`)
	if out, _, _ := run(t, s2, `echo "[${x-}] [${E-}]"; type f 2>&1 | head -1; pwd`); out != "[] []\nbash: line 1: type: f: not found\n/home/user\n" {
		t.Fatalf("the second session sees the first's state: %q", out)
	}
	r1, _, _ := run(t, s1, `echo $RANDOM $RANDOM $RANDOM`)
	r2, _, _ := run(t, s2, `echo $RANDOM $RANDOM $RANDOM`)
	if r1 == r2 {
		t.Errorf("both sessions draw the same $RANDOM: %q", r1)
	}
}
