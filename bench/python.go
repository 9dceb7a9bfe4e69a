package bench

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/wasmbox/wasmbox/sandbox"
	"github.com/wasmbox/wasmbox/wasm"
)

// nativePython is Debian's interpreter, the native side of the python rows.
const nativePython = "/usr/bin/python3"

// The scripts of the python rows: IN is the CSV input's path.
var pythonCases = []struct{ name, script, note string }{
	{"python3 -c pass", "pass", "interpreter start and exit"},
	{"import json, re, csv", "import json, re, csv", "start plus three imports"},
	{"pure-Python loop (10^6 iterations)", "s = 0\nfor i in range(1000000):\n    s += i * i % 7\nprint(s)", "the eval loop"},
	{"10 MB CSV aggregation", "import csv, collections\nt = collections.Counter()\nwith open('IN', newline='') as f:\n    for row in csv.reader(f):\n        t[row[1]] += int(row[2])\nprint(sorted(t.items()))", "csv.reader and a Counter over 10 MB"},
	{"10 MB csv.DictReader", "import csv, collections\nt = collections.Counter()\nwith open('IN', newline='') as f:\n    for row in csv.DictReader(f, fieldnames=('id', 'key', 'value')):\n        t[row['key']] += int(row['value'])\nprint(sorted(t.items()))", "csv.DictReader (a dict per row) and a Counter over 10 MB"},
}

// csv10MB is the input of the CSV row: id,key,value lines.
func csv10MB() []byte {
	keys := []string{"alpha", "beta", "gamma", "delta", "omega"}
	var b bytes.Buffer
	x := uint32(7)
	for i := 0; b.Len() < 10_000_000; i++ {
		x = x*1664525 + 1013904223
		fmt.Fprintf(&b, "%d,%s,%d\n", i, keys[x>>28%uint32(len(keys))], x>>20%1000)
	}
	return b.Bytes()
}

// measurePython times the sandbox's CPython (wasm/python) against Debian's
// /usr/bin/python3 on the same scripts. Without either it reports nothing.
func measurePython(ctx context.Context, e *Env) ([]Row, error) {
	bin, _, ok := wasm.Python()
	if !ok {
		return nil, nil
	}
	if _, err := os.Stat(nativePython); err != nil {
		return nil, nil
	}
	cold, err := coldCompileRow(ctx, e, "python", bin)
	if err != nil {
		return nil, err
	}
	rows := []Row{cold}
	n := e.reps(3, 20)
	sb, err := e.newSandbox(ctx)
	if err != nil {
		return nil, err
	}
	defer sb.Close()
	data := csv10MB()
	host := filepath.Join(e.Dir, "data.csv")
	if err := os.WriteFile(host, data, 0o644); err != nil {
		return nil, err
	}
	if err := sb.WriteFile("/tmp/data.csv", data, 0o644); err != nil {
		return nil, err
	}
	for i, c := range pythonCases {
		reps := n
		if i == 0 {
			reps = e.reps(10, 100)
		}
		if strings.Contains(c.name, "10 MB") {
			reps = e.reps(2, 5)
		}
		guest := strings.ReplaceAll(c.script, "IN", "/tmp/data.csv")
		if err := sb.WriteFile("/tmp/bench.py", []byte(guest), 0o644); err != nil {
			return rows, err
		}
		script := "python3 /tmp/bench.py"
		if i == 0 {
			script = "python3 -c pass"
		}
		box, out, err := timeSandbox(ctx, sb, script, reps)
		if err != nil {
			return rows, err
		}
		hostScript := filepath.Join(e.Dir, "bench.py")
		if err := os.WriteFile(hostScript, []byte(strings.ReplaceAll(c.script, "IN", host)), 0o644); err != nil {
			return rows, err
		}
		argv := []string{nativePython, hostScript}
		if i == 0 {
			argv = []string{nativePython, "-c", "pass"}
		}
		nat, nout, err := timeNative(ctx, argv, reps)
		if err != nil {
			return rows, err
		}
		if out != nout {
			return rows, fmt.Errorf("%s: sandbox printed %q, native %q", c.name, out, nout)
		}
		rows = append(rows, row(c.name, Duration, box, nat, c.note+"; sandbox.Run vs fork/exec "+nativePython))
	}
	// The hard kill: a busy loop ends at the run's deadline.
	var box, nat []float64
	for i := 0; i < n; i++ {
		lat, err := killAfter(ctx, func(ctx context.Context) error {
			res, err := sb.Stream(ctx, "python3 -c 'while True: pass'", nil, io.Discard, io.Discard)
			if err != nil {
				return err
			}
			if res.ErrorClass != sandbox.ClassTimeout {
				return fmt.Errorf("python busy loop ended with exit %d class %q, want TIMEOUT", res.ExitCode, res.ErrorClass)
			}
			return nil
		})
		if err != nil {
			return rows, err
		}
		box = append(box, lat)
		lat, err = killAfter(ctx, func(ctx context.Context) error {
			return nativeKill(ctx, []string{nativePython, "-c", "while True: pass"}, false)
		})
		if err != nil {
			return rows, err
		}
		nat = append(nat, lat)
	}
	rows = append(rows, row("kill `while True: pass`", Duration, box, nat, "deadline to return; native: exec.CommandContext (SIGKILL)"))
	return rows, nil
}
