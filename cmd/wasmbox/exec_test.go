package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/wasmbox/wasmbox/runtime/runtimetest"
	"github.com/wasmbox/wasmbox/wasm"
)

// fixtures writes the guest modules of the tests into a temp dir.
func fixtures(t *testing.T) (dir, cache string) {
	t.Helper()
	dir = t.TempDir()
	files := map[string][]byte{
		"exit7.wasm":   runtimetest.Exit(7),
		"spin.wasm":    runtimetest.Spin(),
		"hog.wasm":     runtimetest.Hog(),
		"missing.wasm": runtimetest.MissingImport(),
		"notwasm.txt":  []byte("#!/bin/sh\necho hi\n"),
		"args.wasm":    runtimetest.Guest(t, "args"),
		"cat.wasm":     runtimetest.Guest(t, "cat"),
		"fsprobe.wasm": runtimetest.Guest(t, "fsprobe"),
		"spawn.wasm":   runtimetest.Guest(t, "spawn"),
		// table.grow by 2^20 entries (8 MiB of host memory) at a time,
		// until it fails or forever.
		"tablegrow.wasm": runtimetest.TableGrow(1<<20, 42),
		"tablespin.wasm": runtimetest.TableGrow(1<<20, -1),
		"locals.wasm":    runtimetest.ManyLocals(50_000_000),
		// 49 KB that makes wazero build 30 million SSA values.
		"loops.wasm": runtimetest.NestedLoops(3000, 10_000, false),
		// Under the caps, seconds of compile; new bytes each time, so
		// that no cache holds it.
		"heavy.wasm": runtimetest.NestedLoops(190, 1000-int(time.Now().UnixNano()%100), true),
	}
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(filepath.Join(dir, "data", "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "data", "hello.txt"), []byte("hello from the host\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	base, err := os.UserCacheDir()
	if err != nil {
		base = os.TempDir()
	}
	return dir, filepath.Join(base, "wasmbox-test", "compile")
}

func TestExec(t *testing.T) {
	dir, cache := fixtures(t)
	tests := []struct {
		name   string
		args   []string
		stdin  string
		exit   int
		stdout string
		stderr string // $DIR stands for the fixtures directory
	}{
		{name: "no file", args: []string{"exec"}, exit: 2, stderr: "wasmbox: exec: missing FILE.wasm\n"},
		{name: "bad flag", args: []string{"exec", "--bogus", "x.wasm"}, exit: 2, stderr: "wasmbox: unknown flag: --bogus\n"},
		{name: "unknown command", args: []string{"frobnicate"}, exit: 2, stderr: "wasmbox: unknown command \"frobnicate\" for \"wasmbox\"\n"},
		{name: "bad memory", args: []string{"exec", "--memory", "lots", "$DIR/exit7.wasm"}, exit: 2,
			stderr: "wasmbox: --memory: bad size \"lots\": want a number with an optional unit, e.g. 64MiB\n"},
		{name: "bad env", args: []string{"exec", "--env", "NOVALUE", "$DIR/exit7.wasm"}, exit: 2,
			stderr: "wasmbox: --env \"NOVALUE\": want K=V\n"},
		{name: "bad mount spec", args: []string{"exec", "--mount", "$DIR", "$DIR/exit7.wasm"}, exit: 2,
			stderr: "wasmbox: --mount: vfs: bad mount spec \"$DIR\": want HOST:GUEST[:ro|:rw|:cow]\n"},
		{name: "bad hostlogging", args: []string{"exec", "--hostlogging", "everything", "$DIR/exit7.wasm"}, exit: 2,
			stderr: "wasmbox: --hostlogging: unknown scope \"everything\" (want filesystem, clock, proc, poll, random, memory, sock or all)\n"},
		{name: "missing file", args: []string{"exec", "$DIR/nope.wasm"}, exit: 1,
			stderr: "wasmbox: open $DIR/nope.wasm: no such file or directory\n"},
		{name: "not wasm", args: []string{"exec", "$DIR/notwasm.txt"}, exit: 1,
			stderr: "wasmbox: $DIR/notwasm.txt: not a WebAssembly module\n"},
		{name: "missing import", args: []string{"exec", "$DIR/missing.wasm"}, exit: 1,
			stderr: "wasmbox: $DIR/missing.wasm: imports not provided by wasmbox: env.foo, wasi_snapshot_preview1.no_such_call\n"},
		{name: "missing mount source", args: []string{"exec", "--mount", "$DIR/nodir:/data", "$DIR/exit7.wasm"}, exit: 1,
			stderr: "wasmbox: --mount $DIR/nodir:/data: stat $DIR/nodir: no such file or directory\n"},
		{name: "mount source is a file at /", args: []string{"exec", "--mount", "$DIR/exit7.wasm:/", "$DIR/exit7.wasm"}, exit: 1,
			stderr: "wasmbox: --mount $DIR/exit7.wasm:/: $DIR/exit7.wasm is not a directory\n"},
		{name: "mount a file", args: []string{"exec", "--mount", "$DIR/data/hello.txt:/in.txt", "$DIR/fsprobe.wasm", "read", "/in.txt", "ls", "/", "write", "/in.txt", "y"},
			exit: 1, stdout: "hello from the host\nbin\ndev\netc\nhome\nin.txt\nroot\ntmp\nusr\n", stderr: "fsprobe: open /in.txt: Read-only file system\n"},
		{name: "exit status", args: []string{"exec", "$DIR/exit7.wasm"}, exit: 7},
		{name: "args and env", args: []string{"exec", "--env", "A=1", "--env", "B=x=y", "$DIR/args.wasm", "-l", "--", "two words"},
			stdout: "argv[0]=$DIR/args.wasm\nargv[1]=-l\nargv[2]=--\nargv[3]=two words\nenv:A=1\nenv:B=x=y\n"},
		{name: "dash dash", args: []string{"exec", "$DIR/args.wasm", "--", "-x"},
			stdout: "argv[0]=$DIR/args.wasm\nargv[1]=-x\n"},
		{name: "dash dash twice", args: []string{"exec", "$DIR/args.wasm", "--", "--", "a"},
			stdout: "argv[0]=$DIR/args.wasm\nargv[1]=--\nargv[2]=a\n"},
		{name: "exact env", args: []string{"exec", "--env", "ONLY=1", "$DIR/args.wasm"},
			stdout: "argv[0]=$DIR/args.wasm\nenv:ONLY=1\n"},
		// No mount, no filesystem: nothing preopened, as with wazero run.
		{name: "no fs", args: []string{"exec", "$DIR/fsprobe.wasm", "ls", "/"}, exit: 1,
			stderr: "fsprobe: open /: Bad file number\n"},
		{name: "no fs flag", args: []string{"exec", "--no-fs", "$DIR/fsprobe.wasm", "ls", "/"}, exit: 1,
			stderr: "fsprobe: open /: Bad file number\n"},
		{name: "no fs with memfs", args: []string{"exec", "--no-fs", "--memfs", "$DIR/exit7.wasm"}, exit: 2,
			stderr: "wasmbox: --no-fs: not with --memfs\n"},
		{name: "no fs with mount", args: []string{"exec", "--no-fs", "--mount", "$DIR/data:/data", "$DIR/exit7.wasm"}, exit: 2,
			stderr: "wasmbox: --no-fs: not with --mount\n"},
		{name: "dash dash first", args: []string{"exec", "--", "$DIR/args.wasm", "-x"},
			stdout: "argv[0]=$DIR/args.wasm\nargv[1]=-x\n"},
		{name: "guest exit from env", args: []string{"exec", "--env", "EXIT=3", "--workdir", "/tmp", "$DIR/args.wasm"}, exit: 3,
			stdout: "argv[0]=$DIR/args.wasm\nenv:EXIT=3\nenv:PWD=/tmp\n"},
		{name: "stdin", args: []string{"exec", "$DIR/cat.wasm"}, stdin: "piped input\n", stdout: "piped input\n"},
		{name: "timeout", args: []string{"exec", "--timeout", "50ms", "$DIR/spin.wasm"}, exit: 124,
			stderr: "wasmbox: timed out after 50ms\n"},
		{name: "memory limit", args: []string{"exec", "--memory", "1MiB", "$DIR/hog.wasm"}, exit: 137,
			stderr: "wasmbox: $DIR/hog.wasm: memory limit exceeded: the guest asked for more than 1MiB of memory\n"},
		// The guest's memory limit bounds its tables too: table.grow
		// fails at the cap, as at a declared maximum.
		{name: "table.grow", args: []string{"exec", "--memory", "64MiB", "--timeout", "5s", "$DIR/tablegrow.wasm"}, exit: 42},
		{name: "table.grow forever", args: []string{"exec", "--memory", "64MiB", "--timeout", "1s", "$DIR/tablespin.wasm"}, exit: 124,
			stderr: "wasmbox: timed out after 1s\n"},
		{name: "refused module", args: []string{"exec", "--memory", "64MiB", "$DIR/locals.wasm"}, exit: 1,
			stderr: "wasmbox: $DIR/locals.wasm: module refused: function 0 declares 50000000 locals (cap 50000)\n"},
		{name: "nested loops refused", args: []string{"exec", "$DIR/loops.wasm"}, exit: 1,
			stderr: "wasmbox: $DIR/loops.wasm: module refused: function 0 would make 30000000 SSA block parameters (branches × locals) (cap 600000)\n"},
		// --timeout bounds the compile too: it ended with the module
		// compiled, seconds later, before.
		{name: "compile past the timeout", args: []string{"exec", "--timeout", "100ms", "$DIR/heavy.wasm"}, exit: 124,
			stderr: "wasmbox: timed out after 100ms\n"},
		{name: "default layout", args: []string{"exec", "--memfs", "$DIR/fsprobe.wasm", "ls", "/", "read", "/etc/group"},
			stdout: "bin\ndev\netc\nhome\nroot\ntmp\nusr\nroot:x:0:\nuser:x:1000:\n"},
		{name: "mount ro", args: []string{"exec", "--mount", "$DIR/data:/data", "$DIR/fsprobe.wasm", "read", "/data/hello.txt", "ls", "/data", "write", "/data/x", "y"},
			exit: 1, stdout: "hello from the host\nhello.txt\nsub\n", stderr: "fsprobe: open /data/x: Read-only file system\n"},
		{name: "mount root rw", args: []string{"exec", "--mount", "$DIR/data:/:rw", "$DIR/fsprobe.wasm", "write", "new.txt", "made", "ls", "/"},
			stdout: "hello.txt\nnew.txt\nsub\n"},
		{name: "spawn a tool", args: []string{"exec", "--memfs", "$DIR/spawn.wasm", `{"argv":["head","-n","1","/etc/passwd"]}`},
			stdout: "root:x:0:0:root:/root:/bin/sh\n", stderr: "errno=0 status=0\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			args := []string{"--cachedir", cache}
			for _, a := range tc.args {
				args = append(args, strings.ReplaceAll(a, "$DIR", dir))
			}
			var stdout, stderr bytes.Buffer
			code := doMain(args, strings.NewReader(tc.stdin), &stdout, &stderr)
			gotOut := strings.ReplaceAll(stdout.String(), dir, "$DIR")
			gotErr := strings.ReplaceAll(stderr.String(), dir, "$DIR")
			if code != tc.exit {
				t.Errorf("exit = %d, want %d (stderr %q)", code, tc.exit, gotErr)
			}
			if gotOut != tc.stdout {
				t.Errorf("stdout\n got %q\nwant %q", gotOut, tc.stdout)
			}
			if gotErr != tc.stderr {
				t.Errorf("stderr\n got %q\nwant %q", gotErr, tc.stderr)
			}
		})
	}
	if b, err := os.ReadFile(filepath.Join(dir, "data", "new.txt")); err != nil || string(b) != "made" {
		t.Errorf("rw mount: %q %v", b, err)
	}
}

func TestExecJSON(t *testing.T) {
	dir, cache := fixtures(t)
	type result struct {
		Stdout     string `json:"stdout"`
		Stderr     string `json:"stderr"`
		ExitCode   int    `json:"exit_code"`
		ErrorClass string `json:"error_class"`
		Truncated  bool   `json:"truncated"`
		DurationMS *int64 `json:"duration_ms"`
	}
	big := strings.Repeat("0123456789abcdef", 128<<10) // 2 MiB
	tests := []struct {
		name  string
		args  []string
		stdin string
		want  result
	}{
		{"ok", []string{"--env", "EXIT=4", "--env", "STDERR=warn", "$DIR/args.wasm", "x"}, "",
			result{Stdout: "argv[0]=$DIR/args.wasm\nargv[1]=x\nenv:EXIT=4\nenv:STDERR=warn\n", Stderr: "warn\n", ExitCode: 4}},
		{"timeout", []string{"--timeout", "20ms", "$DIR/spin.wasm"}, "",
			result{Stderr: "wasmbox: timed out after 20ms\n", ExitCode: 124, ErrorClass: "TIMEOUT"}},
		{"limit", []string{"--memory", "2MiB", "$DIR/hog.wasm"}, "",
			result{Stderr: "wasmbox: $DIR/hog.wasm: memory limit exceeded: the guest asked for more than 2MiB of memory\n", ExitCode: 137, ErrorClass: "LIMIT_EXCEEDED"}},
		{"truncated", []string{"$DIR/cat.wasm"}, big,
			result{Stdout: big[:1<<20], Truncated: true}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			args := []string{"--cachedir", cache, "exec", "--json"}
			for _, a := range tc.args {
				args = append(args, strings.ReplaceAll(a, "$DIR", dir))
			}
			var stdout, stderr bytes.Buffer
			code := doMain(args, strings.NewReader(tc.stdin), &stdout, &stderr)
			if code != tc.want.ExitCode || stderr.Len() != 0 {
				t.Errorf("exit = %d, stderr %q", code, stderr.String())
			}
			dec := json.NewDecoder(strings.NewReader(strings.ReplaceAll(stdout.String(), dir, "$DIR")))
			dec.DisallowUnknownFields()
			var got result
			if err := dec.Decode(&got); err != nil {
				t.Fatalf("not one JSON object: %v\n%.500s", err, stdout.String())
			}
			if dec.More() {
				t.Error("more than one JSON value")
			}
			if got.DurationMS == nil || *got.DurationMS < 0 {
				t.Error("duration_ms missing")
			}
			got.DurationMS = nil
			if got != tc.want {
				t.Errorf("got  %+v\nwant %+v", shorten(got), shorten(tc.want))
			}
		})
	}
}

func shorten(r any) string {
	b, _ := json.Marshal(r)
	if len(b) > 400 {
		return string(b[:400]) + "..."
	}
	return string(b)
}

func TestHostLogging(t *testing.T) {
	dir, cache := fixtures(t)
	var stdout, stderr bytes.Buffer
	code := doMain([]string{"--cachedir", cache, "exec", "--memfs", "--hostlogging", "filesystem", filepath.Join(dir, "fsprobe.wasm"), "read", "/etc/group"},
		strings.NewReader(""), &stdout, &stderr)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	for _, want := range []string{"==> wasi_snapshot_preview1.path_open(", "path=etc/group", "<== (opened_fd="} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("host log lacks %q:\n%.2000s", want, stderr.String())
		}
	}
}

func TestHelp(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := doMain([]string{"--help"}, nil, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d", code)
	}
	if !regexp.MustCompile(`\n  exec +Run a WebAssembly \(WASI\) module in the sandbox\n`).MatchString(stdout.String()) {
		t.Errorf("help:\n%s", stdout.String())
	}
}

// A C guest (SQLite's shell, built with wasi-libc) reads the caller's
// stdin through exec: it read an empty pipe until its deadline, because
// only the Go guests' way of reading started the pump of the host stdin.
func TestExecCGuestReadsStdin(t *testing.T) {
	bin, ok := wasm.SQLite3()
	if !ok {
		t.Skip("sqlite3.wasm is not built in (make python)")
	}
	dir, cache := fixtures(t)
	mod := filepath.Join(dir, "sqlite3.wasm")
	if err := os.WriteFile(mod, bin, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ stdin, stdout string }{
		{"select 1+1;\n", "2\n"},
		{"", ""},
	} {
		var stdout, stderr bytes.Buffer
		code := doMain([]string{"--cachedir", cache, "exec", "--timeout", "20s", mod}, strings.NewReader(tc.stdin), &stdout, &stderr)
		if code != 0 || stdout.String() != tc.stdout {
			t.Errorf("stdin %q: exit %d, stdout %q, stderr %q", tc.stdin, code, stdout.String(), stderr.String())
		}
	}
}
