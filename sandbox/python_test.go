package sandbox

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/wasmbox/wasmbox/executor"
	"github.com/wasmbox/wasmbox/wasm"
)

// pythonSandbox returns a sandbox, skipping the test when the interpreter
// is not built into this binary (make python).
func pythonSandbox(t *testing.T, opts ...Option) *Sandbox {
	t.Helper()
	if _, _, ok := wasm.Python(); !ok {
		t.Skip("wasm/python/python.wasm is not built (make python)")
	}
	if testing.Short() {
		t.Skip("python tests compile the interpreter")
	}
	return newSandbox(t, opts...)
}

func TestPythonConformance(t *testing.T) {
	sb := pythonSandbox(t)
	cases := []struct {
		name   string
		script string
		stdout string
		stderr string // a substring of stderr
		code   int
	}{
		{"pass", `python3 -c pass`, "", "", 0},
		{"names", `python -c 'print(1)'; python3.11 -c 'print(2)'`, "1\n2\n", "", 0},
		{"version", `python3 -c 'import sys; print(sys.version_info[:2], sys.platform)'`, "(3, 11) wasi\n", "", 0},
		{"prefix", `python3 -c 'import os, sys; print(sys.prefix, os.path.dirname(os.__file__))'`, "/usr /usr/lib/python3.11\n", "", 0},
		{"imports", `python3 -c 'import json, re, csv, sqlite3, zlib, gzip, bz2, zipfile, hashlib, datetime, decimal, pathlib, collections, itertools, functools, math, random, statistics, textwrap, string, struct, base64, io, os, sys, time, typing, dataclasses, enum, fractions, heapq, bisect, copy, pprint, argparse, shlex, glob, fnmatch, tempfile, shutil, difflib, unicodedata, html, xml.etree.ElementTree, pyexpat, email, urllib.parse, uuid, secrets, operator, contextlib, abc, logging, unittest, doctest, traceback, inspect, ast, tokenize, tarfile, configparser, calendar, locale, codecs, array, queue, weakref, types; print("ok")'`, "ok\n", "", 0},
		{"json", `python3 -c 'import json; d = {"a": [1, 2.5, None, True], "é": "ü"}; s = json.dumps(d); print(s); assert json.loads(s) == d'`, `{"a": [1, 2.5, null, true], "\u00e9": "\u00fc"}` + "\n", "", 0},
		{"re", `python3 -c 'import re; print(re.sub(r"(\w+)@(\w+)", r"\2 at \1", "me@host you@there"))'`, "host at me there at you\n", "", 0},
		{"csv", `python3 -c 'import csv, io; b = io.StringIO(); csv.writer(b).writerows([["a", "b,c"], [1, "x\"y"]]); print(list(csv.reader(io.StringIO(b.getvalue()))))'`, `[['a', 'b,c'], ['1', 'x"y']]` + "\n", "", 0},
		{"sqlite3", `python3 -c '
import sqlite3
db = sqlite3.connect("/tmp/t.db")
db.execute("create table t (k text, v int)")
db.executemany("insert into t values (?, ?)", [("a", 1), ("b", 2), ("a", 3)])
db.commit()
db.close()
db = sqlite3.connect("/tmp/t.db")
print(db.execute("select k, sum(v) from t group by k order by k").fetchall(), sqlite3.sqlite_version)
'`, "[('a', 4), ('b', 2)] 3.40.1\n", "", 0},
		{"zlib gzip", `python3 -c '
import zlib, gzip, bz2
d = b"hello " * 1000
assert zlib.decompress(zlib.compress(d)) == d
assert bz2.decompress(bz2.compress(d)) == d
with gzip.open("/tmp/x.gz", "wb") as f: f.write(d)
print(len(gzip.open("/tmp/x.gz").read()))
' && gzip -dc /tmp/x.gz | wc -c`, "6000\n6000\n", "", 0},
		{"zipfile", `python3 -c '
import zipfile
with zipfile.ZipFile("/tmp/a.zip", "w", zipfile.ZIP_DEFLATED) as z: z.writestr("f.txt", "x" * 100)
print(zipfile.ZipFile("/tmp/a.zip").read("f.txt") == b"x" * 100)
'`, "True\n", "", 0},
		{"hashlib", `python3 -c 'import hashlib; print(hashlib.sha256(b"abc").hexdigest()[:16], hashlib.md5(b"").hexdigest()[:8])'`, "ba7816bf8f01cfea d41d8cd9\n", "", 0},
		{"datetime decimal", `python3 -c '
import datetime, decimal
print(datetime.date(2024, 2, 28) + datetime.timedelta(days=2), decimal.Decimal("0.1") + decimal.Decimal("0.2"))
print(datetime.datetime.fromisoformat("2024-01-02T03:04:05").isoformat())
'`, "2024-03-01 0.3\n2024-01-02T03:04:05\n", "", 0},
		{"pathlib", `mkdir -p /tmp/p && python3 -c '
import pathlib
p = pathlib.Path("/tmp/p/f.txt")
p.write_text("from python\n")
print(sorted(x.name for x in p.parent.iterdir()), p.stat().st_size)
' && cat /tmp/p/f.txt`, "['f.txt'] 12\nfrom python\n", "", 0},
		{"shell file", `echo 'from the shell' > /tmp/s.txt && python3 -c 'print(open("/tmp/s.txt").read().strip())'`, "from the shell\n", "", 0},
		{"bigint unicode", `python3 -c 'print(2**200 % 1000007, len(str(3**5000)), "ŝ\u00e9🙂".upper())'`, "", "", 0},
		{"stdin", `printf 'a\n' | python3 -c 'import sys; print(sys.stdin.read())'`, "a\n\n", "", 0},
		{"program on stdin", `echo 'print(6 * 7)' | python3 && echo 'import sys; print(sys.argv)' | python3 - x`, "42\n['-', 'x']\n", "", 0},
		{"safe path", `cd /tmp && echo 'X = 1' > shadow.py && python3 -P -c 'import sys; print(sys.path[0] != "")'`, "True\n", "", 0},
		{"pipe", `python3 -c 'for i in range(3): print(i)' | python3 -c 'import sys; print(sum(int(l) for l in sys.stdin))'`, "3\n", "", 0},
		{"script", `printf 'import sys\nprint(sys.argv[1:])\n' > /tmp/s.py && python3 /tmp/s.py a 'b c'`, "['a', 'b c']\n", "", 0},
		{"module", `python3 -m json.tool <<'EOF'
{"b": 1}
EOF`, "{\n    \"b\": 1\n}\n", "", 0},
		{"exit", `python3 -c 'import sys; sys.exit(3)'`, "", "", 3},
		{"exit message", `python3 -c 'import sys; sys.exit("bye")'`, "", "bye", 1},
		{"traceback", `python3 -c '1/0'`, "", "Traceback (most recent call last):\n  File \"<string>\", line 1, in <module>\nZeroDivisionError: division by zero\n", 1},
		{"recursion", `python3 -c '
def f(n): return f(n + 1)
try:
    f(0)
except RecursionError as e:
    print("RecursionError", e)
'`, "RecursionError maximum recursion depth exceeded\n", "", 0},
		{"stdlib read-only", `python3 -c 'open("/usr/lib/python3.11/x.py", "w")'`, "", "OSError", 1},
		{"subprocess run", `python3 -c '
import subprocess
r = subprocess.run(["echo", "hi"], capture_output=True, text=True)
print(repr(r.stdout), r.returncode)
print(subprocess.run("echo a b | wc -w", shell=True, capture_output=True).stdout.strip())
print(subprocess.call(["sh", "-c", "exit 4"]))
'`, "'hi\\n' 0\nb'2'\n4\n", "", 0},
		{"subprocess popen", `python3 -c '
import subprocess
p = subprocess.Popen(["tr", "a-z", "A-Z"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
out, err = p.communicate(b"abc" * 50000)
print(len(out), out[:6], err, p.returncode)
try:
    subprocess.check_output(["false"])
except subprocess.CalledProcessError as e:
    print("CalledProcessError", e.returncode)
try:
    subprocess.run(["no-such-command"])
except FileNotFoundError as e:
    print("FileNotFoundError")
'`, "150000 b'ABCABC' b'' 0\nCalledProcessError 1\nFileNotFoundError\n", "", 0},
		{"os.system popen", `python3 -c '
import os
print(os.system("exit 3") >> 8)
print(os.popen("echo from sh").read().strip())
'`, "3\nfrom sh\n", "", 0},
		{"subprocess shares files", `python3 -c '
import subprocess
open("/tmp/sp.txt", "w").write("one\n")
subprocess.run("echo two >> /tmp/sp.txt", shell=True, check=True)
print(open("/tmp/sp.txt").read(), end="")
'`, "one\ntwo\n", "", 0},
		// Every frame of a traceback shows its line, the standard
		// library's too (its sources ship beside the bytecode).
		{"traceback lines", `python3 -c '
import json
json.loads("{")
'`, "", "\n  File \"/usr/lib/python3.11/json/decoder.py\", line 353, in raw_decode\n    obj, end = self.scan_once(s, idx)\n", 1},
		{"traceback every frame", `python3 -c '
import json, traceback
try:
    json.loads("[1,")
except ValueError:
    frames = traceback.extract_tb(__import__("sys").exc_info()[2])
    print(all(f.line for f in frames[1:]), len(frames) > 2)
'`, "True True\n", "", 0},
		// No network (no WithNetwork): the host refuses every connect
		// with its one-line message.
		{"no network", `python3 -c '
import errno, socket
try:
    socket.create_connection(("example.com", 80), timeout=1)
except OSError as e:
    print(type(e).__name__, errno.errorcode[e.errno], e.strerror)
'`, "ConnectionRefusedError ECONNREFUSED wasmbox: network: example.com is not in the allowlist\n", "", 0},
		{"site-packages", `echo "Y = 7" > /usr/local/lib/python3.11/dist-packages/sitemod.py && python3 -c "import sitemod; print(sitemod.Y)" && mkdir -p ~/.local/lib/python3.11/site-packages && echo 'X = 42' > ~/.local/lib/python3.11/site-packages/mymod.py && python3 -c 'import mymod; print(mymod.X)'`, "7\n42\n", "", 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res := run(t, sb, c.script)
			if c.name == "bigint unicode" {
				c.stdout = res.Stdout
				if !strings.HasSuffix(res.Stdout, " 2386 ŜÉ🙂\n") {
					t.Errorf("stdout = %q", res.Stdout)
				}
			}
			if res.ExitCode != c.code || res.Stdout != c.stdout || !strings.Contains(res.Stderr, c.stderr) {
				t.Errorf("%s:\n exit %d (want %d)\n stdout %q\n   want %q\n stderr %q (want %q in it)",
					c.script, res.ExitCode, c.code, res.Stdout, c.stdout, res.Stderr, c.stderr)
			}
		})
	}
}

// TestPythonKilledAtDeadline: a Python busy loop is fuel-metered like the
// tools, so that the run's deadline ends it.
func TestPythonKilledAtDeadline(t *testing.T) {
	sb := pythonSandbox(t, WithTimeout(2*time.Second))
	res := run(t, sb, `python3 -c 'while True: pass'`)
	if res.ErrorClass != ClassTimeout {
		t.Fatalf("busy loop: %+v; want TIMEOUT", res)
	}
}

// TestPythonMemoryBomb: allocation past the command's memory limit ends
// with MemoryError or LIMIT_EXCEEDED, and the host stays bounded (a
// watchdog fails the test instead of letting it grow).
func TestPythonMemoryBomb(t *testing.T) {
	sb := pythonSandbox(t, WithLimits(Limits{MemoryPerCommand: 256 << 20, Timeout: 60 * time.Second}))
	ctx := hostMemoryWatchdog(t, 1<<30)
	res, err := sb.Run(ctx, `python3 -c '[bytearray(10**8) for i in range(100)]'`)
	if err != nil {
		t.Fatal(err)
	}
	if ctx.Err() != nil {
		t.Fatal("the host went past 1 GiB")
	}
	if !strings.Contains(res.Stderr, "MemoryError") && res.ErrorClass != ClassLimitExceeded {
		t.Fatalf("memory bomb: %+v; want MemoryError or LIMIT_EXCEEDED", res)
	}
	if res.ExitCode == 0 {
		t.Fatalf("memory bomb exited 0: %+v", res)
	}
}

// TestPythonPipOffline: ensurepip's bundled pip installs a pure-Python
// wheel from a local directory into the writable site-packages, with no
// network.
func TestPythonPipOffline(t *testing.T) {
	sb := pythonSandbox(t, WithTimeout(2*time.Minute))
	res := run(t, sb, `mkdir -p /tmp/wheels && python3 -c '
import zipfile, hashlib, base64
files = {"demo/__init__.py": b"V = 42\n",
         "demo-1.0.dist-info/METADATA": b"Metadata-Version: 2.1\nName: demo\nVersion: 1.0\n",
         "demo-1.0.dist-info/WHEEL": b"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"}
rec = ""
for n, d in files.items():
    h = base64.urlsafe_b64encode(hashlib.sha256(d).digest()).rstrip(b"=").decode()
    rec += "%s,sha256=%s,%d\n" % (n, h, len(d))
files["demo-1.0.dist-info/RECORD"] = (rec + "demo-1.0.dist-info/RECORD,,\n").encode()
with zipfile.ZipFile("/tmp/wheels/demo-1.0-py3-none-any.whl", "w") as z:
    for n, d in files.items():
        z.writestr(n, d)
' && python3 -m pip install -q --no-index --find-links /tmp/wheels demo && python3 -c 'import demo; print(demo.V, demo.__file__)'`)
	if res.ExitCode != 0 || res.Stdout != "42 /usr/local/lib/python3.11/dist-packages/demo/__init__.py\n" {
		t.Fatalf("pip install: %+v", res)
	}
}

// BenchmarkPythonPass times `python3 -c pass` through the executor (the
// command alone, no shell) and through Sandbox.Run.
func BenchmarkPythonPass(b *testing.B) {
	if _, _, ok := wasm.Python(); !ok {
		b.Skip("wasm/python/python.wasm is not built (make python)")
	}
	ctx := context.Background()
	sb, err := New(ctx)
	if err != nil {
		b.Fatal(err)
	}
	defer sb.Close()
	job := executor.Job{Argv: []string{"python3", "-c", "pass"}, FS: sb.fs, Dir: "/tmp", Env: []string{"PATH=/usr/bin:/bin", "HOME=/home/user"}}
	if res := sb.engine.exec.Run(ctx, job); res.ExitCode != 0 {
		b.Fatalf("python3 -c pass: %+v", res)
	}
	b.Run("executor", func(b *testing.B) {
		for b.Loop() {
			if res := sb.engine.exec.Run(ctx, job); res.ExitCode != 0 {
				b.Fatalf("python3 -c pass: %+v", res)
			}
		}
	})
	b.Run("sandbox.Run", func(b *testing.B) {
		for b.Loop() {
			if res, err := sb.Run(ctx, "python3 -c pass"); err != nil || res.ExitCode != 0 {
				b.Fatalf("python3 -c pass: %+v %v", res, err)
			}
		}
	})
}
