package bench

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/wasmbox/wasmbox/sandbox"
)

// toolInputs are the 10 MB inputs of measureTools, the same every run.
type toolInputs struct {
	text []byte // 10 MB of word lines (input1MB's shape)
	nums []byte // 1,000,000 lines "N\tWORD"
	json []byte // a 10 MB array of {"a":N,"b":"WORD"} objects
	tree map[string][]byte
}

func makeToolInputs() toolInputs {
	var in toolInputs
	one := input1MB()
	in.text = bytes.Repeat(one, 10)
	var b bytes.Buffer
	x := uint32(7)
	for i := 0; i < 1_000_000; i++ {
		x = x*1664525 + 1013904223
		fmt.Fprintf(&b, "%d\tw%d\n", x>>20, x>>28)
	}
	in.nums = b.Bytes()
	var j bytes.Buffer
	j.WriteByte('[')
	for i := 0; j.Len() < 10_000_000; i++ {
		if i > 0 {
			j.WriteByte(',')
		}
		x = x*1664525 + 1013904223
		fmt.Fprintf(&j, `{"a":%d,"b":"word%d","c":[1,2,3]}`, x>>16, x>>28)
	}
	j.WriteByte(']')
	in.json = j.Bytes()
	// 10,000 files of 1,000 bytes in 100 directories: 10 MB.
	in.tree = map[string][]byte{}
	for i := 0; i < 10000; i++ {
		off := (i * 1000) % (len(one) - 1000)
		in.tree[fmt.Sprintf("d%02d/f%05d.txt", i%100, i)] = one[off : off+1000]
	}
	return in
}

// toolCase is one row of measureTools: a script run in the sandbox and
// argv fork/exec'd natively; IN, NUMS, JSON, TREE, OUT and DIR stand for
// the paths on either side.
type toolCase struct {
	name   string
	script string
	native []string
	// out, when set, names the output file (OUT) whose bytes must agree;
	// otherwise stdout must agree (sorted lines when sortLines).
	out       bool
	sortLines bool
	// gz: OUT is a tar.gz; only its existence and size are checked.
	gz   bool
	note string
}

// measureTools times single tools on 10 MB inputs in the sandbox against
// the GNU tools (and mawk, jq 1.6) on the host: wc, grep, sed, uniq, cut,
// sort, sha256sum, find and tar czf over 10,000 files, awk and jq.
func measureTools(ctx context.Context, e *Env) ([]Row, error) {
	n := e.reps(2, 7)
	// The tree's 10,000 files and its 100 directories are more inodes
	// than a sandbox's default 10,000.
	sb, err := sandbox.New(ctx, sandbox.WithEngine(e.Engine), sandbox.WithLimits(sandbox.Limits{Files: 20_000}),
		sandbox.WithTimeout(5*time.Minute))
	if err != nil {
		return nil, err
	}
	defer sb.Close()
	in := makeToolInputs()
	hostDir := filepath.Join(e.Dir, "tools")
	paths := map[string][2]string{ // name -> sandbox path, host path
		"IN":   {"/tmp/t/in.txt", filepath.Join(hostDir, "in.txt")},
		"NUMS": {"/tmp/t/nums.txt", filepath.Join(hostDir, "nums.txt")},
		"JSON": {"/tmp/t/in.json", filepath.Join(hostDir, "in.json")},
		"DIR":  {"/tmp/t", hostDir},
		"TREE": {"/tmp/t/tree", filepath.Join(hostDir, "tree")},
		"OUT":  {"/tmp/t/out", filepath.Join(hostDir, "out")},
	}
	files := map[string][]byte{"in.txt": in.text, "nums.txt": in.nums, "in.json": in.json}
	for name, data := range in.tree {
		files["tree/"+name] = data
	}
	for name, data := range files {
		h := filepath.Join(hostDir, name)
		if err := os.MkdirAll(filepath.Dir(h), 0o755); err != nil {
			return nil, err
		}
		if err := os.WriteFile(h, data, 0o644); err != nil {
			return nil, err
		}
		if err := sb.MkdirAll(filepath.Dir("/tmp/t/"+name), 0o755); err != nil {
			return nil, err
		}
		if err := sb.WriteFile("/tmp/t/"+name, data, 0o644); err != nil {
			return nil, err
		}
	}
	subst := func(s string, side int) string {
		for _, k := range []string{"NUMS", "JSON", "TREE", "OUT", "DIR", "IN"} {
			s = strings.ReplaceAll(s, k, paths[k][side])
		}
		return s
	}
	cases := []toolCase{
		{name: "wc -l", script: "wc -l IN", native: []string{"wc", "-l", "IN"}},
		{name: "wc -c", script: "wc -c < IN", native: []string{"sh", "-c", "wc -c < IN"}, note: "from stdin (no stat shortcut)"},
		{name: "wc -w", script: "wc -w IN", native: []string{"wc", "-w", "IN"}},
		{name: "wc", script: "wc IN", native: []string{"wc", "IN"}},
		{name: "grep -c literal", script: "grep -c needle IN", native: []string{"grep", "-c", "needle", "IN"}},
		{name: "grep literal > file", script: "grep needle IN > OUT", native: []string{"sh", "-c", "grep needle IN > OUT"}, out: true},
		{name: "grep -c regex", script: "grep -c 'ne[e]dle  *[a-k]' IN", native: []string{"grep", "-c", "ne[e]dle  *[a-k]", "IN"}},
		{name: "grep -ic", script: "grep -ic NEEDLE IN", native: []string{"grep", "-ic", "NEEDLE", "IN"}},
		// No line matches (grep exits 1): every line goes through the regex.
		{name: "grep -cE '[0-9]+x'", script: "grep -cE '[0-9]+x' IN; test $? = 1", native: []string{"sh", "-c", "grep -cE '[0-9]+x' IN; test $? = 1"}, note: "no line matches"},
		{name: "sed s/a/A/g > file", script: "sed s/a/A/g IN > OUT", native: []string{"sh", "-c", "sed s/a/A/g IN > OUT"}, out: true},
		{name: "uniq -c > file", script: "uniq -c IN > OUT", native: []string{"sh", "-c", "uniq -c IN > OUT"}, out: true},
		{name: "cut -d' ' -f2,4 > file", script: "cut -d' ' -f2,4 IN > OUT", native: []string{"sh", "-c", "cut -d' ' -f2,4 IN > OUT"}, out: true},
		{name: "sort > file", script: "sort IN > OUT", native: []string{"sort", "-o", "OUT", "IN"}, out: true},
		{name: "sort -n -k1,1 > file", script: "sort -n -k1,1 NUMS > OUT", native: []string{"sort", "-n", "-k1,1", "-o", "OUT", "NUMS"}, out: true},
		{name: "sha256sum", script: "sha256sum IN", native: []string{"sha256sum", "IN"}},
		{name: "find 10,000 files", script: "find TREE -name '*.txt'", native: []string{"find", "TREE", "-name", "*.txt"}, sortLines: true},
		{name: "tar czf 10,000 files", script: "tar czf OUT -C DIR tree", native: []string{"tar", "czf", "OUT", "-C", "DIR", "tree"}, gz: true},
		{name: "awk sum 1M lines", script: "awk '{s+=$1} END {print s}' NUMS", native: []string{"awk", "{s+=$1} END {print s}", "NUMS"}, note: "native: /usr/bin/awk (mawk)"},
		{name: "awk count by key", script: "awk '{c[$2]++} END {for (k in c) print k, c[k]}' NUMS", native: []string{"awk", "{c[$2]++} END {for (k in c) print k, c[k]}", "NUMS"}, sortLines: true, note: "native: mawk"},
		{name: "jq .[]|.a", script: "jq '.[]|.a' JSON > OUT", native: []string{"sh", "-c", "jq '.[]|.a' JSON > OUT"}, out: true, note: "native: jq 1.6"},
	}
	var rows []Row
	for _, c := range cases {
		if err := ctx.Err(); err != nil {
			return rows, err
		}
		script := subst(c.script, 0)
		argv := make([]string, len(c.native))
		for i, a := range c.native {
			argv[i] = subst(a, 1)
		}
		if !strings.HasPrefix(argv[0], "/") {
			argv[0] = "/usr/bin/" + argv[0]
		}
		// One untimed run first: the first use of a module loads it.
		if _, _, err := timeSandbox(ctx, sb, script, 1); err != nil {
			return rows, err
		}
		box, out, err := timeSandbox(ctx, sb, script, n)
		if err != nil {
			return rows, err
		}
		var boxOut []byte
		if c.out || c.gz {
			if boxOut, err = sb.ReadFile(paths["OUT"][0]); err != nil {
				return rows, err
			}
		}
		nat, nout, err := timeNative(ctx, argv, n)
		if err != nil {
			return rows, err
		}
		switch {
		case c.gz:
			st, err := os.Stat(paths["OUT"][1])
			if err != nil {
				return rows, err
			}
			if len(boxOut) < 1000 || len(boxOut) > 4*int(st.Size()) {
				return rows, fmt.Errorf("%s: sandbox wrote %d bytes, GNU %d", c.name, len(boxOut), st.Size())
			}
		case c.out:
			natOut, err := os.ReadFile(paths["OUT"][1])
			if err != nil {
				return rows, err
			}
			if !bytes.Equal(boxOut, natOut) {
				return rows, fmt.Errorf("%s: sandbox output (%d bytes, sha256 %x) differs from native (%d bytes, %x)",
					c.name, len(boxOut), sha256.Sum256(boxOut), len(natOut), sha256.Sum256(natOut))
			}
		default:
			a := strings.ReplaceAll(out, paths["DIR"][0], "")
			b := strings.ReplaceAll(nout, paths["DIR"][1], "")
			if c.sortLines {
				a, b = sortedLines(a), sortedLines(b)
			}
			if !sameOutput(a, b) {
				return rows, fmt.Errorf("%s: sandbox printed %.200q, native %.200q", c.name, a, b)
			}
		}
		note := "10 MB input; sandbox.Run vs fork/exec " + argv[0]
		if c.note != "" {
			note += "; " + c.note
		}
		rows = append(rows, row(c.name, Duration, box, nat, note))
		if c.out || c.gz {
			_ = os.Remove(paths["OUT"][1])
			if _, err := sb.Run(ctx, "rm -f "+paths["OUT"][0]); err != nil {
				return rows, err
			}
		}
	}
	return rows, nil
}

func sortedLines(s string) string {
	l := strings.Split(strings.TrimSpace(s), "\n")
	sort.Strings(l)
	return strings.Join(l, "\n")
}
