package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// openPty opens a pseudo-terminal pair through /dev/ptmx.
func openPty(t *testing.T) (master, slave *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY|syscall.O_CLOEXEC, 0)
	if err != nil {
		t.Skipf("no pseudo-terminal here: %v", err)
	}
	if err := unix.IoctlSetPointerInt(int(m.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		m.Close()
		t.Fatal(err)
	}
	n, err := unix.IoctlGetInt(int(m.Fd()), unix.TIOCGPTN)
	if err != nil {
		m.Close()
		t.Fatal(err)
	}
	s, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY|syscall.O_CLOEXEC, 0)
	if err != nil {
		m.Close()
		t.Fatal(err)
	}
	return m, s
}

// The guest's OSC 52 (clipboard), CSI 6n (cursor report), title, DCS and
// private-mode sequences reach a real terminal escaped, from "wasmbox
// shell" and "wasmbox run", on stdout and stderr; its colours pass. With a
// pipe as stdout the bytes are unchanged.
func TestGuestEscapesOnTerminal(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	const script = `printf '\033]52;c;cHduZWQ=\007\033[6n\033[31mred\033[0m\n'; printf '\033]0;title\007\033P$qm\033\\\033[?1000h\n' >&2`
	for _, tc := range []struct {
		name  string
		args  []string
		stdin string
	}{
		// The prompt shows the guest's directory, whose name is the guest's.
		{"shell", []string{"shell"}, script + "\nmkdir \"$(printf 'd\\033]52;c;eQ==\\007')\" && cd d*\ntrue\n"},
		{"run", []string{"run", "-c", script}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			master, slave := openPty(t)
			defer master.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute) // watchdog
			defer cancel()
			cmd := exec.CommandContext(ctx, exe, append([]string{"--cachedir", testCacheDir()}, tc.args...)...)
			cmd.Env = append(os.Environ(), "WASMBOX_TEST_AS_WASMBOX=1", "WASMBOX_ENGINE=off")
			cmd.Stdin, cmd.Stdout, cmd.Stderr = strings.NewReader(tc.stdin), slave, slave
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			slave.Close()
			var got bytes.Buffer
			done := make(chan struct{})
			go func() { io.Copy(&got, master); close(done) }() // ends with EIO once the child is gone
			if err := cmd.Wait(); err != nil {
				t.Errorf("wasmbox %s: %v", tc.name, err)
			}
			select {
			case <-done:
			case <-ctx.Done():
				t.Fatal("the terminal never closed")
			}
			out := got.String()
			for _, bad := range []string{"\x1b]52", "\x1b[6n", "\x1b]0;", "\x1bP", "\x1b[?1000h"} {
				if strings.Contains(out, bad) {
					t.Errorf("%q reached the terminal: %q", bad, out)
				}
			}
			wants := []string{"^[]52;c;cHduZWQ=\a^[[6n\x1b[31mred\x1b[0m", "^[]0;title\a^[P$qm^[\\^[[?1000h"}
			if tc.name == "shell" {
				wants = append(wants, "/home/user/d^[]52;c;eQ==\a$ ")
			}
			for _, want := range wants {
				if !strings.Contains(out, want) {
					t.Errorf("terminal shows %q, want %q in it", out, want)
				}
			}
		})
	}
	// Through a pipe the bytes are the guest's.
	stdout, _, code := runMain(t, "", "--cachedir", testCacheDir(), "run", "-c", `printf '\033]52;c;eA==\007\033[6n'`)
	if code != 0 || stdout != "\x1b]52;c;eA==\a\x1b[6n" {
		t.Fatalf("through a pipe: %d %q", code, stdout)
	}
}
