package bench

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/wasmbox/wasmbox/runtime"
	"github.com/wasmbox/wasmbox/sandbox"
	"github.com/wasmbox/wasmbox/wasm"
)

// nativeBash is the reference bash of the bash rows (the same version,
// 5.2.15, as wasm/bash.wasm).
const nativeBash = "/usr/bin/bash"

// The scripts of the bash rows (issue 22's speed targets): IN is the 1 MB
// input's path.
var bashCases = []struct{ name, script, note string }{
	{"100k-iteration while loop",
		`i=0; s=0; while [ $i -lt 100000 ]; do s=$((s+i%7)); i=$((i+1)); done; echo $s`,
		"[ ] and two $((...)) per iteration; target <= 4x bash"},
	{"string operations on 20k small strings",
		`n=0; t=0; out=""
for ((i=0; i<20000; i++)); do
  w="item_$i.txt"; b=${w%.txt}; u=${b^^}; r=${u/ITEM/it}
  case $r in it_*5) n=$((n+1));; esac
  t=$((t+${#r})); [[ $b == *7* ]] && out="${b:0:3}"
done
echo $n $t $out`,
		"suffix removal, case change, substitution, case, length, [[ ]], substring; target <= 4x bash"},
	{"5-stage pipeline on 1 MB",
		`cat IN | tr a-z A-Z | sort | uniq -c | wc -l`,
		"bash forks 5 children: cat | tr | sort | uniq -c | wc -l; target <= 3x bash"},
}

// measureBash times GNU bash in the sandbox (sandbox.WithShell(ShellBash):
// every Run is `bash -c SCRIPT` in wasm/bash.wasm) against /usr/bin/bash -c
// on the same scripts, and the cold compile of bash.wasm. Without a built-in
// bash.wasm it reports nothing.
func measureBash(ctx context.Context, e *Env) ([]Row, error) {
	bin, ok := wasm.Bash()
	if !ok {
		return nil, nil
	}
	cold, err := coldCompileRow(ctx, e, "bash", bin)
	if err != nil {
		return nil, err
	}
	rows := []Row{cold}

	sb, err := sandbox.New(ctx, sandbox.WithEngine(e.Engine), sandbox.WithTimeout(5*time.Minute), sandbox.WithShell(sandbox.ShellBash))
	if err != nil {
		return rows, err
	}
	defer sb.Close()
	host, err := e.prepareInput(sb)
	if err != nil {
		return rows, err
	}
	// The first run instantiates what the engine compiled: not measured.
	if _, err := sb.Run(ctx, "true"); err != nil {
		return rows, err
	}
	n := e.reps(3, 10)
	for _, c := range bashCases {
		box, out, err := timeSandbox(ctx, sb, strings.ReplaceAll(c.script, "IN", "/tmp/in.txt"), n)
		if err != nil {
			return rows, err
		}
		nat, nout, err := timeNative(ctx, []string{nativeBash, "-c", strings.ReplaceAll(c.script, "IN", host)}, n)
		if err != nil {
			return rows, err
		}
		if !sameOutput(out, nout) {
			return rows, fmt.Errorf("%s: sandbox printed %q, bash %q", c.name, out, nout)
		}
		rows = append(rows, row(c.name, Duration, box, nat, c.note+"; GNU bash in wasm (sandbox.Run, WithShell bash) vs "+nativeBash+" -c"))
	}
	srows, err := measureBashSession(ctx, e, sb)
	return append(rows, srows...), err
}

// measureBashSession times the live bash session's fixed costs (issue 22's
// targets): a new sandbox and its first command, a builtin-only Run, and a
// Fork of a session with state, each n times after one unmeasured warm-up.
func measureBashSession(ctx context.Context, e *Env, sb *sandbox.Sandbox) ([]Row, error) {
	n := e.reps(20, 200)
	opts := []sandbox.Option{sandbox.WithEngine(e.Engine), sandbox.WithShell(sandbox.ShellBash)}
	var rows []Row
	var ds []float64
	for i := 0; i <= n; i++ {
		start := time.Now()
		nsb, err := sandbox.New(ctx, opts...)
		if err != nil {
			return rows, err
		}
		res, err := nsb.Run(ctx, "echo hi")
		d := time.Since(start)
		nsb.Close()
		if err != nil || res.Stdout != "hi\n" {
			return rows, fmt.Errorf("new bash session: %v %q", err, res.Stdout)
		}
		if i > 0 {
			ds = append(ds, seconds(d))
		}
	}
	rows = append(rows, row("bash session: new sandbox and first command", Duration, ds, nil,
		"sandbox.New(WithShell bash) + Run(echo hi); target <= 2 ms"))
	if _, err := sb.Run(ctx, `x=1; f() { echo $x; }`); err != nil {
		return rows, err
	}
	box, out, err := timeSandbox(ctx, sb, `x=1; y=$((x+1)); echo "$x $y"`, n)
	if err != nil {
		return rows, err
	}
	if out != "1 2\n" {
		return rows, fmt.Errorf("builtin run printed %q", out)
	}
	rows = append(rows, row("bash session: builtin-only Run", Duration, box, nil,
		"x=1; y=$((x+1)); echo; target <= 300 us"))
	ds = ds[:0]
	for i := 0; i <= n; i++ {
		start := time.Now()
		c, err := sb.Fork()
		d := time.Since(start)
		if err != nil {
			return rows, err
		}
		c.Close()
		if i > 0 {
			ds = append(ds, seconds(d))
		}
	}
	rows = append(rows, row("bash session: Fork", Duration, ds, nil,
		"sandbox.Fork of a bash session with state; target <= 1 ms"))
	return rows, nil
}

// coldCompileRow times the compile the first run of a process pays for
// the module bin without the disk cache (a faster build must not make it
// much slower; the engine keeps it compiled after that).
func coldCompileRow(ctx context.Context, e *Env, name string, bin []byte) (Row, error) {
	var cold []float64
	for i := 0; i < e.reps(1, 3); i++ {
		rt, err := runtime.New(ctx, runtime.Config{DisableCache: true})
		if err != nil {
			return Row{}, err
		}
		start := time.Now()
		_, err = rt.Compile(ctx, name, bin)
		d := time.Since(start)
		rt.Close(ctx)
		if err != nil {
			return Row{}, fmt.Errorf("compile %s: %w", name, err)
		}
		cold = append(cold, seconds(d))
	}
	return row("cold compile of "+name+".wasm", Duration, cold, nil,
		fmt.Sprintf("%d bytes; runtime.Compile with the disk cache disabled", len(bin))), nil
}
