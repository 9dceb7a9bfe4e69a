package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// openPTY opens a pseudo-terminal pair: the master, and the slave a child
// uses as its terminal.
func openPTY(t *testing.T) (master, slave *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminal: %v", err)
	}
	fd := int(m.Fd())
	if err := unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0); err != nil {
		m.Close()
		t.Fatalf("unlockpt: %v", err)
	}
	n, err := unix.IoctlGetInt(fd, unix.TIOCGPTN)
	if err != nil {
		m.Close()
		t.Fatalf("ptsname: %v", err)
	}
	s, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		m.Close()
		t.Fatalf("open the slave: %v", err)
	}
	return m, s
}

// ptyScreen collects what a terminal shows.
type ptyScreen struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	more chan struct{} // signalled on every read
}

func (p *ptyScreen) Write(b []byte) (int, error) {
	p.mu.Lock()
	p.buf.Write(b)
	p.mu.Unlock()
	select {
	case p.more <- struct{}{}:
	default:
	}
	return len(b), nil
}

func (p *ptyScreen) String() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.buf.String()
}

// waitFor waits until the screen holds want n times in all; a watchdog
// (not a timing assertion: a machine under load takes what it takes)
// fails the test if it never does.
func (p *ptyScreen) waitFor(t *testing.T, want string, n int, exited <-chan struct{}) {
	t.Helper()
	watchdog := time.After(90 * time.Second)
	for strings.Count(p.String(), want) < n {
		select {
		case <-p.more:
		case <-exited:
			// The output may still be in flight: look once more.
			time.Sleep(100 * time.Millisecond)
			if strings.Count(p.String(), want) >= n {
				return
			}
			t.Fatalf("the session ended before %q appeared %d times; screen:\n%s", want, n, p.String())
		case <-watchdog:
			t.Fatalf("%q never appeared %d times; screen:\n%s", want, n, p.String())
		}
	}
}

// TestShellCtrlC drives `wasmbox shell` in a real terminal (a pty): Ctrl-C
// at an idle prompt drops the typed line and gives a new prompt; Ctrl-C
// during `sleep 1000` ends that line only; a variable set before survives;
// Ctrl-D leaves with status 0. Before, either Ctrl-C ended the whole
// session with status 125.
func TestShellCtrlC(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	master, slave := openPTY(t)
	defer master.Close()
	cmd := exec.Command(exe, "--cachedir", testCacheDir(), "shell", "--timeout", "10m")
	cmd.Env = append(os.Environ(), "WASMBOX_TEST_AS_WASMBOX=1")
	cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, slave, slave
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	if err := cmd.Start(); err != nil {
		slave.Close()
		t.Fatal(err)
	}
	slave.Close()
	screen := &ptyScreen{more: make(chan struct{}, 1)}
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		buf := make([]byte, 4096)
		for {
			n, err := master.Read(buf)
			screen.Write(buf[:n])
			if err != nil {
				return // EIO once the child has gone
			}
		}
	}()
	exited := make(chan struct{})
	var waitErr error
	go func() {
		waitErr = cmd.Wait()
		close(exited)
	}()
	defer func() {
		select {
		case <-exited:
		default:
			cmd.Process.Kill()
			<-exited
		}
	}()
	typeIn := func(s string) {
		t.Helper()
		if _, err := master.Write([]byte(s)); err != nil {
			t.Fatalf("typing %q: %v", s, err)
		}
	}
	const prompt = "/home/user$ "
	screen.waitFor(t, prompt, 1, exited)
	typeIn("x=42\n")
	screen.waitFor(t, prompt, 2, exited)

	// Ctrl-C at the prompt, in the middle of a line: the line is
	// dropped (PART''IAL is what the terminal echoes, PARTIAL what
	// running it would print), a new prompt follows.
	typeIn("echo PART''IAL")
	screen.waitFor(t, "PART''IAL", 1, exited)
	typeIn("\x03")
	screen.waitFor(t, prompt, 3, exited)

	// Ctrl-C while a line runs: once it has started (START printed),
	// Ctrl-C ends it and a new prompt follows. It has time for 1000
	// seconds, more than the watchdog waits.
	typeIn("echo ST''ART; sleep 1000; echo NOT''REACHED\n")
	screen.waitFor(t, "START", 1, exited)
	typeIn("\x03")
	screen.waitFor(t, prompt, 4, exited)
	typeIn("echo status=$? x=$x\n")
	screen.waitFor(t, "x=42\r\n", 1, exited)
	screen.waitFor(t, prompt, 5, exited)

	// Ctrl-D at an empty prompt ends the session with the last status.
	typeIn("\x04")
	select {
	case <-exited:
	case <-time.After(90 * time.Second): // a watchdog
		t.Fatalf("Ctrl-D did not end the session; screen:\n%s", screen.String())
	}
	<-copied
	out := screen.String()
	var ee *exec.ExitError
	if waitErr != nil && !errors.As(waitErr, &ee) {
		t.Fatal(waitErr)
	}
	if code := cmd.ProcessState.ExitCode(); code != 0 {
		t.Fatalf("exit status %d, want 0; screen:\n%s", code, out)
	}
	for _, bad := range []string{"PARTIAL", "NOTREACHED"} {
		if strings.Contains(out, bad) {
			t.Errorf("%s ran; screen:\n%s", bad, out)
		}
	}
	if strings.Count(out, prompt) != 5 {
		t.Errorf("%d prompts, want 5; screen:\n%s", strings.Count(out, prompt), out)
	}
}
