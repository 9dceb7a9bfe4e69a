package engine

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/wasmbox/wasmbox/sandbox"
)

// asOther are the roles the test binary plays when run as another
// process (another user, fewer capabilities, another namespace): the
// environment variable names the role, its value the socket.
var asOther = map[string]func(sock string){
	// Ask the engine on sock for its status, without the client's own
	// check of the engine (the engine's check is under test).
	"WASMBOX_ENGINE_TEST_DIAL": func(sock string) {
		conn, err := net.Dial("unix", sock)
		if err != nil {
			fmt.Println("dial:", err)
			os.Exit(1)
		}
		var rep Reply
		if err = WriteFrame(conn, Request{Op: "status"}); err == nil {
			err = ReadFrame(conn, &rep, MaxControlFrame)
		}
		if err != nil {
			fmt.Println("refused:", err)
			os.Exit(0)
		}
		fmt.Printf("served: %+v\n", rep.Status)
	},
	// Ask the engine on sock, without the client's check of the engine
	// (the engine's check is under test), to read the file named by
	// WASMBOX_ENGINE_TEST_FILE, after trying to read it here: print
	// both outcomes.
	"WASMBOX_ENGINE_TEST_DEPUTY": func(sock string) {
		file := os.Getenv("WASMBOX_ENGINE_TEST_FILE")
		_, err := os.ReadFile(file)
		fmt.Printf("own read: %v\n", err)
		key, err := Key("/cache")
		fmt.Printf("key: %s %v\n", key, err)
		conn, err := net.DialUnix("unix", nil, &net.UnixAddr{Name: sock, Net: "unix"})
		if err != nil {
			fmt.Println("dial:", err)
			os.Exit(1)
		}
		rep, err := Submit(conn, Request{Op: "run", Key: "k", Args: []string{"run", "read", file}}, nil, os.Stdout, os.Stdout, nil)
		fmt.Printf("\nengine: %+v %v\n", rep, err)
		// The client's own check, on a connection of its own.
		if conn, err := Dial(sock); err != nil {
			fmt.Printf("client check: %v\n", err)
		} else {
			conn.Close()
			fmt.Println("client check: passed")
		}
	},
	// Listen on sock as an impostor engine: print "ready", then how many
	// bytes the first client sent before it hung up.
	"WASMBOX_ENGINE_TEST_LISTEN": func(sock string) {
		ln, err := net.Listen("unix", sock)
		if err != nil {
			fmt.Println("listen:", err)
			os.Exit(1)
		}
		os.Chmod(sock, 0o777)
		fmt.Println("ready")
		conn, err := ln.Accept()
		if err != nil {
			fmt.Println("accept:", err)
			os.Exit(1)
		}
		conn.SetReadDeadline(time.Now().Add(20 * time.Second))
		n, err := io.Copy(io.Discard, conn)
		fmt.Printf("received %d bytes (%v)\n", n, err)
	},
}

func TestMain(m *testing.M) {
	for env, f := range asOther {
		if v := os.Getenv(env); v != "" {
			f(v)
			os.Exit(0)
		}
	}
	os.Exit(m.Run())
}

// stuck holds the runs of "run stuck" until closed.
var stuck = make(chan struct{})

// testHandler runs the command lines of these tests: run VERB ARGS.
func testHandler(ctx context.Context, r *Run) (int, string) {
	if len(r.Args) < 2 {
		return 2, ""
	}
	switch r.Args[1] {
	case "fallback":
		return 0, "asked to"
	case "echo":
		r.Accept()
		fmt.Fprintln(r.Stdout, strings.Join(r.Args[2:], " "))
		fmt.Fprintln(r.Stderr, "to stderr")
		return 0, ""
	case "cat":
		r.Accept()
		io.Copy(r.Stdout, r.Stdin)
		return 0, ""
	case "exit":
		r.Accept()
		n, _ := strconv.Atoi(r.Args[2])
		return n, ""
	case "wait":
		r.Accept()
		fmt.Fprintln(r.Stderr, "started")
		<-ctx.Done()
		return 125, ""
	case "read":
		r.Accept()
		b, err := os.ReadFile(r.Args[2])
		if err != nil {
			fmt.Fprintln(r.Stderr, err)
			return 1, ""
		}
		r.Stdout.Write(b)
		return 0, ""
	case "stuck":
		// Where cancelling does not reach (a write to a hung file
		// system, say): until the test lets it go.
		r.Accept()
		fmt.Fprintln(r.Stderr, "started")
		<-stuck
		return 1, ""
	case "panic":
		r.Accept()
		panic("a bug")
	}
	return 2, ""
}

// privateDir is a directory only this user may enter, with a short path
// (a socket's path must fit in sun_path).
func privateDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "we-") // mode 0700
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// startServer serves an engine of key "k" with testHandler (and cfg's
// other fields) on a socket in a private directory; it is stopped at the
// test's end.
func startServer(t *testing.T, cfg Config) (sock string) {
	t.Helper()
	cfg.Socket = filepath.Join(privateDir(t), "e.sock")
	if cfg.Key == "" {
		cfg.Key = "k"
	}
	if cfg.Idle == 0 {
		cfg.Idle = time.Hour
	}
	if cfg.Handler == nil {
		cfg.Handler = testHandler
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- Serve(ctx, cfg) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-served:
			if err != nil {
				t.Errorf("Serve: %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Errorf("the engine did not end 30 s after its context")
		}
	})
	conn, err := Wait(cfg.Socket, 30*time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	conn.Close()
	return cfg.Socket
}

type result struct {
	stdout, stderr string
	rep            Reply
	err            error
}

// submit runs args on the engine on sock with stdin from a file.
func submit(t *testing.T, sock, key, stdin string, args ...string) result {
	t.Helper()
	conn, err := Dial(sock)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	tmp := t.TempDir()
	os.WriteFile(filepath.Join(tmp, "in"), []byte(stdin), 0o600)
	in, _ := os.Open(filepath.Join(tmp, "in"))
	defer in.Close()
	out, _ := os.Create(filepath.Join(tmp, "out"))
	defer out.Close()
	errf, _ := os.Create(filepath.Join(tmp, "err"))
	defer errf.Close()
	rep, err := Submit(conn, Request{Op: "run", Key: key, Args: args, Dir: "/"}, in, out, errf, nil)
	o, _ := os.ReadFile(out.Name())
	e, _ := os.ReadFile(errf.Name())
	return result{string(o), string(e), rep, err}
}

// TestServeRuns: the exchange of the protocol for runs taken, refused and
// failed.
func TestServeRuns(t *testing.T) {
	sock := startServer(t, Config{})
	if got := submit(t, sock, "k", "", "run", "echo", "hi"); got.err != nil || got.stdout != "hi\n" || got.stderr != "to stderr\n" || got.rep.Exit != 0 {
		t.Errorf("echo: %+v", got)
	}
	if got := submit(t, sock, "k", "in put\n", "run", "cat"); got.err != nil || got.stdout != "in put\n" {
		t.Errorf("cat: %+v", got)
	}
	if got := submit(t, sock, "k", "", "run", "exit", "7"); got.err != nil || got.rep.Exit != 7 {
		t.Errorf("exit 7: %+v", got)
	}
	for _, c := range []struct {
		key  string
		args []string
	}{{"k", []string{"run", "fallback"}}, {"other", []string{"run", "echo", "x"}}, {"k", []string{"serve"}}, {"k", nil}} {
		if got := submit(t, sock, c.key, "", c.args...); !errors.Is(got.err, ErrNotTaken) || got.stdout != "" || got.stderr != "" {
			t.Errorf("key %s, %q: %+v, want ErrNotTaken and no output", c.key, c.args, got)
		}
	}
	// A panic ends that run only.
	if got := submit(t, sock, "k", "", "run", "panic"); got.err != nil || got.rep.Exit != 1 || !strings.Contains(got.stderr, "internal error: a bug") {
		t.Errorf("panic: %+v", got)
	}
	rep, err := Op(sock, "status")
	if err != nil || rep.Status == nil || rep.Status.PID != os.Getpid() || rep.Status.Runs != 8 || rep.Status.Socket != sock {
		t.Fatalf("status: %v %+v", err, rep.Status)
	}
}

// TestServeCancel: a cancel frame and a client going away both end the
// run.
func TestServeCancel(t *testing.T) {
	sock := startServer(t, Config{})
	for _, how := range []string{"frame", "hang up"} {
		conn, err := Dial(sock)
		if err != nil {
			t.Fatal(err)
		}
		errName := filepath.Join(t.TempDir(), "err")
		errf, _ := os.Create(errName)
		null, _ := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
		sigs := make(chan os.Signal, 1)
		done := make(chan result, 1)
		go func() {
			rep, err := Submit(conn, Request{Op: "run", Key: "k", Args: []string{"run", "wait"}}, nil, null, errf, sigs)
			done <- result{rep: rep, err: err}
		}()
		for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(5 * time.Millisecond) {
			if b, _ := os.ReadFile(errName); string(b) == "started\n" {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("the run did not start")
			}
		}
		if how == "frame" {
			sigs <- os.Interrupt
			if got := <-done; got.err != nil || got.rep.Exit != 125 {
				t.Errorf("cancel: %+v", got)
			}
		} else {
			conn.Close()
			<-done
		}
		conn.Close()
		errf.Close()
		null.Close()
		for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(5 * time.Millisecond) {
			rep, err := Op(sock, "status")
			if err != nil {
				t.Fatal(err)
			}
			if rep.Status.Active == 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: the run still active 20 s later", how)
			}
		}
	}
}

// TestBadClientsLeakNothing: clients sending the wrong descriptors (a
// directory or a socket as stdin, too many, too few), a request of
// another build, bad frames, or descriptors with status leave the engine
// no descriptor and no goroutine.
func TestBadClientsLeakNothing(t *testing.T) {
	sock := startServer(t, Config{})
	submit(t, sock, "k", "", "run", "echo", "warm")
	goruntime.GC()
	time.Sleep(50 * time.Millisecond)
	base := goruntime.NumGoroutine()
	countFds := func() int {
		ents, _ := os.ReadDir("/proc/self/fd")
		return len(ents)
	}
	dir, _ := os.Open(t.TempDir())
	defer dir.Close()
	null, _ := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	defer null.Close()
	sp, _ := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	defer syscall.Close(sp[0])
	defer syscall.Close(sp[1])
	pr, pw, _ := os.Pipe()
	defer pr.Close()
	defer pw.Close()
	frame := func(v any) []byte {
		var b bytes.Buffer
		WriteFrame(&b, v)
		return b.Bytes()
	}
	run := Request{Op: "run", Key: "k", Args: []string{"run", "echo", "no"}, Dir: "/"}
	other := run
	other.Key = "other"
	n, d, p := int(null.Fd()), int(dir.Fd()), int(pr.Fd())
	fds0 := countFds()
	for _, c := range []struct {
		msg []byte
		fds []int
	}{
		{frame(run), []int{d, n, n}},
		{frame(run), []int{sp[0], n, n}},
		{frame(run), []int{p, n, n, n, n, n}},
		{frame(run), []int{p, n}},
		{frame(other), []int{p, n, n}},
		{frame(Request{Op: "status"}), []int{p, n, n}},
		{frame(Request{Op: "nonsense"}), []int{p, n, n}},
		{append([]byte{0, 0, 0, 2}, "{x"...), []int{p, n, n}},
		{[]byte{0xff, 0xff, 0xff, 0xff}, []int{p, n, n}},
		{append([]byte{0, 0, 1, 0}, "{}"...), []int{p, n, n}}, // cut: the client hangs up
	} {
		conn, err := Dial(sock)
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := conn.WriteMsgUnix(c.msg, syscall.UnixRights(c.fds...), nil); err != nil {
			t.Fatal(err)
		}
		conn.CloseWrite()
		var rep Reply
		ReadFrame(conn, &rep, MaxControlFrame) // an answer or a hang-up
		conn.Close()
	}
	deadline := time.Now().Add(20 * time.Second)
	for countFds() > fds0 || goruntime.NumGoroutine() > base {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			t.Fatalf("%d descriptors open (%d before), %d goroutines (%d before)\n%s", countFds(), fds0, goruntime.NumGoroutine(), base, buf[:goruntime.Stack(buf, true)])
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestRefusesOtherUsers: even with the socket open to everyone, the
// engine serves no process of another uid (SO_PEERCRED).
func TestRefusesOtherUsers(t *testing.T) {
	setpriv, err := exec.LookPath("setpriv")
	if os.Geteuid() != 0 || err != nil {
		t.Skip("needs root and setpriv(1)")
	}
	sock := startServer(t, Config{})
	dir := filepath.Dir(sock)
	bin := openToOthers(t, dir)
	os.Chmod(sock, 0o666)
	cmd := exec.Command(setpriv, "--reuid=1000", "--regid=1000", "--clear-groups", bin)
	cmd.Env = []string{"WASMBOX_ENGINE_TEST_DIAL=" + sock, "HOME=" + dir}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	// It reached the engine (no permission error on the way) and was
	// hung up on.
	if o := string(out); !strings.HasPrefix(o, "refused:") || !hungUp(o) {
		t.Fatalf("uid 1000: %s", out)
	}
	// Its own user still is.
	if _, err := Op(sock, "status"); err != nil {
		t.Fatal(err)
	}
}

func hungUp(o string) bool {
	for _, s := range []string{"EOF", "connection reset", "broken pipe"} {
		if strings.Contains(o, s) {
			return true
		}
	}
	return false
}

// openToOthers opens dir (a privateDir) to other users and copies the
// test binary into it, for them to run.
func openToOthers(t *testing.T, dir string) (bin string) {
	t.Helper()
	os.Chmod(dir, 0o755)
	exe, _ := os.Executable()
	b, err := os.ReadFile(exe)
	if err != nil {
		t.Fatal(err)
	}
	bin = filepath.Join(dir, "engine.test")
	if err := os.WriteFile(bin, b, 0o755); err != nil {
		t.Fatal(err)
	}
	return bin
}

// TestDirMustBePrivate: the socket directory is refused when another
// user could have made it or may enter it.
func TestDirMustBePrivate(t *testing.T) {
	base := t.TempDir()
	uid := os.Geteuid()
	ok := filepath.Join(base, "ok")
	os.Mkdir(ok, 0o700)
	if err := CheckPrivateDir(ok, uid); err != nil {
		t.Fatal(err)
	}
	open := filepath.Join(base, "open")
	os.Mkdir(open, 0o700)
	os.Chmod(open, 0o755)
	link := filepath.Join(base, "link")
	os.Symlink(ok, link)
	file := filepath.Join(base, "file")
	os.WriteFile(file, nil, 0o600)
	bad := []string{open, link, file, filepath.Join(base, "missing")}
	if uid == 0 {
		other := filepath.Join(base, "other")
		os.Mkdir(other, 0o700)
		os.Chown(other, 1000, 1000)
		bad = append(bad, other)
	}
	for _, d := range bad {
		if err := CheckPrivateDir(d, uid); err == nil {
			t.Errorf("%s: accepted", d)
		}
	}
	// Serve refuses such a directory too.
	err := Serve(context.Background(), Config{Socket: filepath.Join(open, "e.sock"), Key: "k", Idle: time.Hour, Handler: testHandler})
	if err == nil || !strings.Contains(err.Error(), "open to other users") {
		t.Fatalf("serve in a 0755 directory: %v", err)
	}
}

// TestWaitEndsWithEngine: a client waiting for the engine it started
// stops waiting when that engine fails (it could not listen), instead of
// dialing until its deadline on every run.
func TestWaitEndsWithEngine(t *testing.T) {
	cmd := exec.Command("/bin/sh", "-c", "exit 1")
	if err := cmd.Start(); err != nil {
		t.Skip(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	done := make(chan error, 1)
	go func() {
		_, err := Wait(filepath.Join(t.TempDir(), "none.sock"), time.Minute, exited)
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("dialed a socket nobody listens on")
		}
	case <-time.After(20 * time.Second):
		t.Fatal("still waiting 20 s after the engine exited 1")
	}
}

// TestSharedFailureEnds: an engine whose shared sandbox engine failed
// (its compile) exits, so that the next run starts an engine that tries
// again instead of one that fails every run until it is idle.
func TestSharedFailureEnds(t *testing.T) {
	sock := filepath.Join(privateDir(t), "e.sock")
	served := make(chan error, 1)
	go func() {
		served <- Serve(context.Background(), Config{Socket: sock, Key: "k", Idle: time.Hour, Handler: testHandler,
			Shared: func(context.Context) (*sandbox.Engine, error) { return nil, errors.New("cannot compile") }})
	}()
	select {
	case err := <-served:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the engine still serves 30 s after its compile failed")
	}
	if _, err := os.Stat(sock); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("socket left behind: %v", err)
	}
}

// TestClientRefusesImpostor: an engine socket served by another uid (the
// owner of $XDG_RUNTIME_DIR, after a plain su, can swap the directory
// between the client's check of the path and its connect) gets nothing
// from the client: not the request with its environment, not the
// descriptors. The client checks the peer on the connection it dialed.
func TestClientRefusesImpostor(t *testing.T) {
	setpriv, err := exec.LookPath("setpriv")
	if os.Geteuid() != 0 || err != nil {
		t.Skip("needs root and setpriv(1)")
	}
	dir := privateDir(t)
	bin := openToOthers(t, dir)
	theirs := filepath.Join(dir, "u")
	os.Mkdir(theirs, 0o700)
	os.Chown(theirs, 1000, 1000)
	sock := filepath.Join(theirs, "e.sock")
	cmd := exec.Command(setpriv, "--reuid=1000", "--regid=1000", "--clear-groups", bin)
	cmd.Env = []string{"WASMBOX_ENGINE_TEST_LISTEN=" + sock, "HOME=" + dir}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		cmd.Process.Kill()
		cmd.Wait()
	}()
	var line [6]byte
	if _, err := io.ReadFull(out, line[:]); err != nil || string(line[:]) != "ready\n" {
		t.Fatalf("the impostor: %q %v", line, err)
	}
	conn, err := Dial(sock)
	if err == nil {
		null, _ := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
		defer null.Close()
		Submit(conn, Request{Op: "run", Key: "k", Args: []string{"run", "echo"}, Env: []string{"SECRET=s3cret"}}, nil, null, null, nil)
		conn.Close()
		t.Errorf("Dial accepted an engine of uid 1000")
	} else if !strings.Contains(err.Error(), "uid 1000") {
		t.Errorf("Dial: %v, want an error naming uid 1000", err)
	}
	rest, _ := io.ReadAll(out)
	if !strings.HasPrefix(string(rest), "received 0 bytes") {
		t.Fatalf("the impostor %s", rest)
	}
}

// TestEngineRefusesDeputy: a client of the engine's uid that may read
// less than the engine (its capabilities dropped, or a mount namespace
// hiding a directory) does not read through the engine what it cannot
// read itself: the engine serves only clients of its own identity, the
// others run in-process. The client refuses such an engine too.
func TestEngineRefusesDeputy(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	const secret = "canary-7f3a"
	for _, c := range []struct {
		name string
		tool string
		cmd  func(tool, bin, hidden string) *exec.Cmd
	}{
		{"capabilities dropped", "setpriv", func(tool, bin, _ string) *exec.Cmd {
			return exec.Command(tool, "--inh-caps=-all", "--bounding-set=-all", bin)
		}},
		{"mount namespace", "unshare", func(tool, bin, hidden string) *exec.Cmd {
			return exec.Command(tool, "-m", "--propagation", "private", "/bin/sh", "-c", `mount -t tmpfs tmpfs "$1" && exec "$2"`, "sh", hidden, bin)
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			tool, err := exec.LookPath(c.tool)
			if err != nil {
				t.Skipf("needs %s(1)", c.tool)
			}
			sock := startServer(t, Config{})
			bin := openToOthers(t, filepath.Dir(sock))
			hidden := filepath.Join(t.TempDir(), "hidden")
			os.Mkdir(hidden, 0o755)
			canary := filepath.Join(hidden, "canary")
			os.WriteFile(canary, []byte(secret), 0o600)
			os.Chown(canary, 1000, 1000) // root reads it only with CAP_DAC_OVERRIDE
			cmd := c.cmd(tool, bin, hidden)
			cmd.Env = []string{"WASMBOX_ENGINE_TEST_DEPUTY=" + sock, "WASMBOX_ENGINE_TEST_FILE=" + canary, "PATH=" + os.Getenv("PATH")}
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Skipf("%s: %v: %s", c.name, err, out)
			}
			o := string(out)
			if !strings.Contains(o, "own read: open") {
				t.Fatalf("the client could read the canary itself: %s", o)
			}
			if strings.Contains(o, secret) {
				t.Errorf("the client read the canary through the engine:\n%s", o)
			}
			if !strings.Contains(o, "engine: {Accept:false Fallback:the client") {
				t.Errorf("the engine did not send the client back to run in-process:\n%s", o)
			}
			if !strings.Contains(o, "client check: engine: refused") {
				t.Errorf("the client accepted an engine that may read more than it:\n%s", o)
			}
			// Before it dials: its engine is another (Key), which it
			// would start with its own identity.
			own, err := Key("/cache")
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(o, "key: ") || strings.Contains(o, "key: "+own) {
				t.Errorf("the client's engine key is the engine's (%s):\n%s", own, o)
			}
		})
	}
}

// TestPeerIdentitySelf: a process is its own peer's equal (a socketpair),
// and the identity holds the capabilities, the namespaces and the root.
func TestPeerIdentitySelf(t *testing.T) {
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	f := os.NewFile(uintptr(fds[0]), "a")
	defer f.Close()
	defer syscall.Close(fds[1])
	c, err := net.FileConn(f)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	self, err := SelfIdentity()
	if err != nil {
		t.Fatal(err)
	}
	if err := CheckPeer(c.(*net.UnixConn), self); err != nil {
		t.Fatal(err)
	}
	all := strings.Join(self.fields, "\n")
	for _, want := range []string{"CapEff ", "CapBnd ", "Groups ", "ns/mnt mnt:[", "ns/user user:[", "ns/pid pid:[", "root "} {
		if !strings.Contains(all, want) {
			t.Errorf("the identity has no %q:\n%s", want, all)
		}
	}
}

// TestStopNotHeldByStuckRun: a run that does not end does not hold the
// engine: after a stop, the socket and the lock are free at once (the next
// client starts a new engine instead of waiting for this one), and once
// the engine's context ends (SIGTERM) it exits after stopGrace.
func TestStopNotHeldByStuckRun(t *testing.T) {
	defer func(g time.Duration) { stopGrace = g }(stopGrace)
	stopGrace = 200 * time.Millisecond
	sock := filepath.Join(privateDir(t), "e.sock")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	served := make(chan error, 1)
	go func() { served <- Serve(ctx, Config{Socket: sock, Key: "k", Idle: time.Hour, Handler: testHandler}) }()
	conn, err := Wait(sock, 30*time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	errName := filepath.Join(t.TempDir(), "err")
	errf, _ := os.Create(errName)
	defer errf.Close()
	submitted := make(chan struct{})
	go func() {
		defer close(submitted)
		Submit(conn, Request{Op: "run", Key: "k", Args: []string{"run", "stuck"}}, nil, errf, errf, nil)
	}()
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if b, _ := os.ReadFile(errName); string(b) == "started\n" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the run did not start")
		}
	}
	rep, err := Op(sock, "stop")
	if err != nil || rep.Status == nil || rep.Status.PID != os.Getpid() || rep.Status.Active != 1 {
		t.Fatalf("stop: %v %+v", err, rep.Status)
	}
	// A new engine takes the socket while the old one waits for its run.
	ctx2, cancel2 := context.WithCancel(context.Background())
	served2 := make(chan error, 1)
	go func() { served2 <- Serve(ctx2, Config{Socket: sock, Key: "k", Idle: time.Hour, Handler: testHandler}) }()
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		select {
		case err := <-served2:
			t.Fatalf("a new engine could not start while the old one drains: %v", err)
		default:
		}
		if rep, err := Op(sock, "status"); err == nil && rep.Status.Active == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no new engine on the socket 20 s after the stop")
		}
	}
	cancel2()
	<-served2
	// SIGTERM: the stuck run does not keep the engine.
	cancel()
	select {
	case err := <-served:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the engine still runs 30 s after its context ended")
	}
	close(stuck)
	conn.Close()
	<-submitted
}

// TestGoRunBinary: the go command's temporary binaries are told from
// others by their place.
func TestGoRunBinary(t *testing.T) {
	tmp := os.TempDir()
	t.Setenv("GOTMPDIR", "/var/gotmp")
	for exe, want := range map[string]bool{
		filepath.Join(tmp, "go-build3141592653/b001/exe/wasmbox"):  true,
		filepath.Join(tmp, "go-build1/b042/exe/wasmbox"):           true,
		"/var/gotmp/go-build27/b001/exe/wasmbox":                   true,
		filepath.Join(tmp, "go-build3141592653/b001/wasmbox.test"): false, // go test's
		filepath.Join(tmp, "other/go-build1/b001/exe/wasmbox"):     false,
		"/usr/local/bin/wasmbox":                                   false,
		"/home/u/go/bin/wasmbox":                                   false,
		"/home/u/src/go-build1/b001/exe/wasmbox":                   false,
		filepath.Join(tmp, "exe/wasmbox"):                          false,
		filepath.Join(tmp, "go-buildX/../../etc/exe/wasmbox"):      false,
	} {
		if got := GoRunBinary(filepath.Clean(exe)); got != want {
			t.Errorf("%s: %v, want %v", exe, got, want)
		}
	}
}
