package morecmds

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"sort"

	"github.com/wasmbox/wasmbox/tools/internal/cmd"
)

func init() {
	cmd.Register("sum", sumMain)
	cmd.Register("tsort", tsortMain)
	cmd.Register("link", linkMain)
	cmd.Register("unlink", unlinkMain)
}

// sumMain is GNU sum: the BSD 16-bit rotating checksum with 1 KiB blocks
// (the default, -r) or the System V checksum with 512-byte blocks (-s).
func sumMain(e *cmd.Env) int {
	opts, files, status, ok := parse(e, []cmd.Option{{Short: 'r'}, {Short: 's', Long: "sysv"}}, "sum [OPTION]... [FILE]...", 1)
	if !ok {
		return status
	}
	sysv := false
	for _, o := range opts {
		switch o.Name {
		case "r":
			sysv = false
		case "sysv":
			sysv = true
		}
	}
	printName := len(files) > 0
	out := bufio.NewWriter(e.Stdout)
	for _, name := range inputs(files) {
		r, closeFn, err := openIn(e, name)
		if err != nil {
			out.Flush()
			e.Errorf("%s: %s", name, strerror(err))
			status = 1
			continue
		}
		var bsd uint32
		var total, n64 uint64
		buf := make([]byte, 64<<10)
		var rerr error
		for {
			n, err := r.Read(buf)
			for _, c := range buf[:n] {
				bsd = (bsd >> 1) + ((bsd & 1) << 15)
				bsd = (bsd + uint32(c)) & 0xffff
				total += uint64(c)
			}
			n64 += uint64(n)
			if err != nil {
				if err != io.EOF {
					rerr = err
				}
				break
			}
		}
		closeFn()
		if rerr != nil {
			out.Flush()
			e.Errorf("%s: %s", name, strerror(rerr))
			status = 1
			continue
		}
		if sysv {
			r := (total & 0xffff) + ((total & 0xffffffff) >> 16)
			sum := (r & 0xffff) + (r >> 16)
			fmt.Fprintf(out, "%d %d", sum, (n64+511)/512)
		} else {
			fmt.Fprintf(out, "%05d %5d", bsd, (n64+1023)/1024)
		}
		if printName {
			fmt.Fprintf(out, " %s", name)
		}
		out.WriteByte('\n')
	}
	return flush(e, out, status)
}

// tsortItem is a node of tsort's graph.
type tsortItem struct {
	str     string
	done    bool
	count   int
	succ    []*tsortItem // most recent relation first, as coreutils keeps them
	qlink   *tsortItem
	inQueue bool
}

// tsortMain is GNU tsort, following coreutils' algorithm so that the order
// among unrelated items (sorted names, successors in reverse input order)
// and the loop report are the same.
func tsortMain(e *cmd.Env) int {
	_, files, status, ok := parse(e, nil, "tsort [OPTION] [FILE]", 1)
	if !ok {
		return status
	}
	if len(files) > 1 {
		return e.Usage(1, fmt.Errorf("extra operand %s", quote(files[1])))
	}
	name := "-"
	if len(files) == 1 {
		name = files[0]
	}
	data, err := readAll(e, name)
	if err != nil {
		e.Errorf("%s: %s", name, strerror(err))
		return 1
	}
	items := map[string]*tsortItem{}
	get := func(s string) *tsortItem {
		it := items[s]
		if it == nil {
			it = &tsortItem{str: s}
			items[s] = it
		}
		return it
	}
	var pending *tsortItem
	for _, tok := range bytes.Fields(data) {
		j := get(string(tok))
		if pending != nil {
			if pending != j {
				j.count++
				pending.succ = append([]*tsortItem{j}, pending.succ...)
			}
			pending = nil
		} else {
			pending = j
		}
	}
	if pending != nil {
		e.Errorf("%s: input contains an odd number of tokens", quotef(name))
		return 1
	}
	// In-order walk of coreutils' search tree: sorted by strcmp.
	order := make([]*tsortItem, 0, len(items))
	for _, it := range items {
		order = append(order, it)
	}
	sort.Slice(order, func(a, b int) bool { return order[a].str < order[b].str })
	out := bufio.NewWriter(e.Stdout)
	left := len(order)
	for left > 0 {
		var queue []*tsortItem
		for _, it := range order {
			if it.count == 0 && !it.done {
				queue = append(queue, it)
			}
		}
		for q := 0; q < len(queue); q++ {
			h := queue[q]
			out.WriteString(h.str)
			out.WriteByte('\n')
			h.done = true
			left--
			for _, s := range h.succ {
				s.count--
				if s.count == 0 {
					queue = append(queue, s)
				}
			}
		}
		if left > 0 {
			out.Flush()
			e.Errorf("%s: input contains a loop:", quotef(name))
			status = 1
			// Print the loop and remove a relation to break it.
			var loop *tsortItem
			for {
				found := false
				for _, k := range order {
					if tsortDetect(e, k, &loop) {
						found = true
						break
					}
				}
				if found || loop == nil {
					break
				}
			}
		}
	}
	return flush(e, out, status)
}

// tsortDetect is coreutils' detect_loop, called on each item in order
// until it returns true.
func tsortDetect(e *cmd.Env, k *tsortItem, loop **tsortItem) bool {
	if k.count <= 0 || k.done {
		return false
	}
	if *loop == nil {
		*loop = k
		return false
	}
	for i, s := range k.succ {
		if s != *loop {
			continue
		}
		if k.qlink != nil {
			for l := *loop; l != nil; {
				tmp := l.qlink
				e.Errorf("%s", l.str)
				if l == k {
					s.count--
					k.succ = append(k.succ[:i:i], k.succ[i+1:]...)
					break
				}
				l.qlink = nil
				l = tmp
				*loop = l
			}
			for l := *loop; l != nil; {
				tmp := l.qlink
				l.qlink = nil
				l = tmp
			}
			*loop = nil
			return true
		}
		k.qlink = *loop
		*loop = k
		break
	}
	return false
}

func linkMain(e *cmd.Env) int {
	_, ops, status, ok := parse(e, nil, "link FILE1 FILE2", 1)
	if !ok {
		return status
	}
	switch len(ops) {
	case 0:
		return e.Usage(1, fmt.Errorf("missing operand"))
	case 1:
		return e.Usage(1, fmt.Errorf("missing operand after %s", quote(ops[0])))
	case 2:
	default:
		return e.Usage(1, fmt.Errorf("extra operand %s", quote(ops[2])))
	}
	if err := os.Link(ops[0], ops[1]); err != nil {
		e.Errorf("cannot create link %s to %s: %s", quote(ops[1]), quote(ops[0]), strerror(err))
		return 1
	}
	return 0
}

func unlinkMain(e *cmd.Env) int {
	_, ops, status, ok := parse(e, nil, "unlink FILE", 1)
	if !ok {
		return status
	}
	switch len(ops) {
	case 0:
		return e.Usage(1, fmt.Errorf("missing operand"))
	case 1:
	default:
		return e.Usage(1, fmt.Errorf("extra operand %s", quote(ops[1])))
	}
	if fi, err := os.Lstat(ops[0]); err == nil && fi.IsDir() {
		e.Errorf("cannot unlink %s: Is a directory", quote(ops[0]))
		return 1
	}
	if err := os.Remove(ops[0]); err != nil {
		e.Errorf("cannot unlink %s: %s", quote(ops[0]), strerror(err))
		return 1
	}
	return 0
}
