// Copyright (c) 2017, Daniel Martí <mvdan@mvdan.cc>
// See LICENSE for licensing information

package interp

import (
	"context"
	"fmt"
	"io"
	"maps"
	"strconv"
	"strings"
	"sync"

	"github.com/wasmbox/wasmbox/internal/sh/expand"
	"github.com/wasmbox/wasmbox/internal/sh/syntax"
)

// The file descriptors above 2: `3>file`, `4<&0`, `{fd}>file`, `exec 5>&1`.
// Standard input, output and error stay the runner's stdin, stdout and
// stderr fields; the others live in Runner.fds, a map that a statement with
// redirections replaces by a copy, so that they last for that statement
// only, unless the exec builtin keeps them.

// minVarFD is the lowest descriptor that `{name}>file` allocates, as in bash.
const minVarFD = 10

// fdFile is an open file that descriptors refer to.
type fdFile struct {
	r io.Reader // nil if not open for reading
	w io.Writer // nil if not open for writing

	// closer is closed when the last owned reference goes (nil for
	// duplicates of the standard streams, which the runner does not own).
	closer io.Closer
	refs   int // owned references; only the runner that opened it counts them

	mu sync.Mutex
	in stdinFile // r as a stdinFile, made on first use
}

// fdRef is one descriptor's entry. A runner owns the references it made;
// a subshell borrows its parent's, and neither counts nor closes them.
type fdRef struct {
	f     *fdFile
	owned bool
}

// stdin returns f's reader as the runner's stdin type; a reader of another
// type is copied into a pipe once, which every later use shares.
func (f *fdFile) stdin(r *Runner) (stdinFile, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.in == nil {
		in, err := r.newStdinFile(f.r)
		if err != nil {
			return nil, err
		}
		f.in = in
	}
	return f.in, nil
}

func (r *Runner) release(ref fdRef) {
	if !ref.owned {
		return
	}
	ref.f.refs--
	if ref.f.refs == 0 && ref.f.closer != nil {
		ref.f.closer.Close()
	}
}

// borrowedFDs is a subshell's copy of r's descriptors.
func (r *Runner) borrowedFDs() map[int]fdRef {
	if len(r.fds) == 0 {
		return nil
	}
	m := make(map[int]fdRef, len(r.fds))
	for n, ref := range r.fds {
		m[n] = fdRef{f: ref.f}
	}
	return m
}

// endRedirs ends the descriptors of a statement that began with old: with
// keep (exec), the new table stays and the references it dropped are
// released; otherwise the old table comes back and the references the
// statement made are released.
func (r *Runner) endRedirs(old map[int]fdRef, keep bool) {
	cur := r.fds
	from, to := cur, old
	if keep {
		from, to = old, cur
	}
	for n, ref := range from {
		if kept, ok := to[n]; !ok || kept != ref {
			r.release(ref)
		}
	}
	if !keep {
		r.fds = old
	}
}

// CloseFDs closes the descriptors above 2 that the runner holds (those that
// exec opened), as the end of a script would.
func (r *Runner) CloseFDs() {
	for _, ref := range r.fds {
		r.release(ref)
	}
	r.fds = nil
}

// setFD makes descriptor n refer to ref. The caller made r.fds a copy.
func (r *Runner) setFD(n int, ref fdRef) error {
	switch n {
	case 0:
		if ref.f.r == nil {
			return fmt.Errorf("%d: Bad file descriptor", n)
		}
		in, err := ref.f.stdin(r)
		if err != nil {
			return err
		}
		r.stdin = in
		r.release(ref)
		return nil
	case 1, 2:
		if ref.f.w == nil {
			return fmt.Errorf("%d: Bad file descriptor", n)
		}
		if n == 1 {
			r.stdout = ref.f.w
		} else {
			r.stderr = ref.f.w
		}
		r.release(ref)
		return nil
	}
	if r.fds == nil {
		r.fds = map[int]fdRef{}
	}
	r.fds[n] = ref
	return nil
}

// dupFD returns a new reference to what descriptor m refers to, for
// `n>&m` (write) or `n<&m` (read).
func (r *Runner) dupFD(m int, write bool) (fdRef, error) {
	bad := fmt.Errorf("%d: Bad file descriptor", m)
	switch m {
	case 0:
		if r.stdin == nil || write {
			return fdRef{}, bad
		}
		return fdRef{f: &fdFile{r: r.stdin, in: r.stdin}}, nil
	case 1:
		return fdRef{f: &fdFile{w: r.stdout}}, nil
	case 2:
		return fdRef{f: &fdFile{w: r.stderr}}, nil
	}
	ref, ok := r.fds[m]
	if !ok || (write && ref.f.w == nil) || (!write && ref.f.r == nil) {
		return fdRef{}, bad
	}
	if ref.owned {
		ref.f.refs++
	}
	return ref, nil
}

// closeFD closes descriptor n for `n>&-`.
func (r *Runner) closeFD(n int) {
	switch n {
	case 0:
		r.stdin = nil
	case 1:
		r.stdout = io.Discard
	case 2:
		r.stderr = io.Discard
	default:
		delete(r.fds, n)
	}
}

// redirFD returns the descriptor a redirection applies to: its number, the
// default of its operator, or for `{name}>...` a new one from 10 up that is
// assigned to name (or, to close it, the one name holds).
func (r *Runner) redirFD(rd *syntax.Redirect) (int, error) {
	if rd.N == nil {
		switch rd.Op {
		case syntax.RdrIn, syntax.RdrInOut, syntax.DplIn, syntax.Hdoc, syntax.DashHdoc, syntax.WordHdoc:
			return 0, nil
		}
		return 1, nil
	}
	v := rd.N.Value
	if name, ok := strings.CutPrefix(v, "{"); ok {
		name = strings.TrimSuffix(name, "}")
		if (rd.Op == syntax.DplOut || rd.Op == syntax.DplIn) && rd.Word.Lit() == "-" {
			w, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Document(strings.NewReader("${" + name + "}"))
			if err != nil {
				return 0, fmt.Errorf("%s: invalid variable name", v)
			}
			n, err := strconv.Atoi(r.literal(w))
			if err != nil || n < 0 {
				return 0, fmt.Errorf("%s: ambiguous redirect", v)
			}
			return n, nil
		}
		n := minVarFD
		for ; ; n++ {
			if _, ok := r.fds[n]; !ok {
				break
			}
		}
		if !syntax.ValidName(strings.SplitN(name, "[", 2)[0]) {
			return 0, fmt.Errorf("%s: invalid variable name", v)
		}
		w, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(name+"="+strconv.Itoa(n)), "")
		if err != nil || len(w.Stmts) != 1 {
			return 0, fmt.Errorf("%s: invalid variable name", v)
		}
		ce, ok := w.Stmts[0].Cmd.(*syntax.CallExpr)
		if !ok || len(ce.Assigns) != 1 || len(ce.Args) != 0 {
			return 0, fmt.Errorf("%s: invalid variable name", v)
		}
		as := ce.Assigns[0]
		prev := r.lookupVar(as.Name.Value)
		prev.Local = false
		vname, vr := r.assignVal(as.Name.Value, prev, as, "")
		r.setVarWithIndex(prev, vname, as.Index, vr)
		return n, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("%s: bad file descriptor", v)
	}
	return n, nil
}

// cloneFDs gives the statement a table of its own to change.
func (r *Runner) cloneFDs() map[int]fdRef {
	old := r.fds
	r.fds = maps.Clone(old)
	return old
}

// FD returns what descriptor n of the command's shell reads from and
// writes to (nil when it is not open for that), for builtins such as
// `read -u N` that a handler implements. ok is false when n is not open.
func (hc HandlerContext) FD(n int) (r io.Reader, w io.Writer, ok bool) {
	switch n {
	case 0:
		return hc.Stdin, nil, hc.Stdin != nil
	case 1:
		return nil, hc.Stdout, true
	case 2:
		return nil, hc.Stderr, true
	}
	if hc.runner == nil {
		return nil, nil, false
	}
	ref, ok := hc.runner.fds[n]
	if !ok {
		return nil, nil, false
	}
	if ref.f.r != nil {
		in, err := ref.f.stdin(hc.runner)
		if err == nil && in != nil {
			r = in
		}
	}
	return r, ref.f.w, true
}

// coproc runs `coproc [NAME] cmd` (NAME defaults to COPROC): cmd runs in
// the background with its standard input and output connected through
// pipes to two new descriptors of the shell, NAME[1] to write to it and
// NAME[0] to read from it; NAME_PID holds the job's id for wait.
func (r *Runner) coproc(ctx context.Context, cm *syntax.CoprocClause) {
	name := "COPROC"
	if cm.Name != nil {
		name = r.literal(cm.Name)
	}
	if !syntax.ValidName(name) {
		r.errf("coproc: `%s': not a valid identifier\n", name)
		r.exit.code = 1
		return
	}
	inR, inW, err := r.newPipe() // the shell writes, the coprocess reads
	if err != nil {
		r.exit.fatal(err)
		return
	}
	outR, outW, err := r.newPipe() // the coprocess writes, the shell reads
	if err != nil {
		inR.Close()
		inW.Close()
		r.exit.fatal(err)
		return
	}
	r2 := r.subshell(true)
	r2.stdin = inR
	r2.stdout = outW
	bg := bgProc{done: make(chan struct{}), exit: new(exitStatus)}
	r.bgProcs = append(r.bgProcs, bg)
	go func() {
		r2.stmt(ctx, cm.Stmt)
		r2.exit.exiting = false // subshells don't exit the parent shell
		outW.Close()
		inR.Close()
		*bg.exit = r2.exit
		close(bg.done)
	}()
	if r.fds == nil {
		r.fds = map[int]fdRef{}
	}
	fds := [2]int{}
	for i, f := range []*fdFile{
		{r: outR, in: outR, closer: outR, refs: 1},
		{w: inW, closer: inW, refs: 1},
	} {
		n := minVarFD
		for ; ; n++ {
			if _, ok := r.fds[n]; !ok {
				break
			}
		}
		r.fds[n] = fdRef{f: f, owned: true}
		fds[i] = n
	}
	r.setVar(name, expand.Variable{Set: true, Kind: expand.Indexed, List: []string{strconv.Itoa(fds[0]), strconv.Itoa(fds[1])}})
	r.setVarString(name+"_PID", "g"+strconv.Itoa(len(r.bgProcs)))
}

// InheritFDs gives r the descriptors above 2 of the shell that runs the
// command of hc, as a child process inherits them (r borrows them: it
// neither counts nor closes them). Apply it after Reset.
func InheritFDs(hc HandlerContext) RunnerOption {
	return func(r *Runner) error {
		if hc.runner != nil {
			r.fds = hc.runner.borrowedFDs()
		}
		return nil
	}
}
