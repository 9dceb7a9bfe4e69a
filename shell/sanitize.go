package shell

import (
	"fmt"
	"strings"

	"github.com/wasmbox/wasmbox/internal/sh/syntax"
)

// Names the sanitizer writes into scripts.
const (
	// checkCmd was prepended to loop bodies and conditions by earlier
	// versions (the interpreter's loop hook does its work now); function
	// texts of old snapshots still hold it, and it still runs as true.
	checkCmd = "__wasmbox_check"
	// procSubstCmd reads its stdin into a VFS temporary file and prints the
	// file's path: `<(cmds)` becomes `$({ cmds; } | __wasmbox_procsubst)`.
	procSubstCmd = "__wasmbox_procsubst"
	// procSubstOutCmd creates an empty VFS temporary file and prints its
	// path, for `>(cmds)` (see procSubstOut); statusCmd exits with the
	// status its argument gives.
	procSubstOutCmd = "__wasmbox_procsubst_out"
	statusCmd       = "__wasmbox_status"
	// guardCmd runs its argument, shell source, through eval under a
	// recover: pipelines' left sides and background jobs run in goroutines
	// the interpreter starts, where a panic of the interpreter would kill
	// the host process. Wrapped so, the panic unwinds through the shell's
	// handler and is recovered.
	guardCmd = "__wasmbox_guard"
)

// sanitize rewrites a parsed script before the interpreter sees it, to
// close the doors the interpreter's own configuration cannot:
//
//   - `<(cmds)` runs cmds to completion into a VFS temporary file (the
//     interpreter would create a FIFO in the host's temp directory);
//     `>(cmds)` in a simple command's arguments or redirections names a
//     VFS temporary file that cmds reads once the command has ended (see
//     procSubstOut); elsewhere, and zsh's `=(...)`, it is refused;
//   - `$$` and `$PPID` expand to the sandbox's pids, not the host's;
//   - function calls, command substitutions and background jobs open a
//     frame (see framePath and jobPath) so that depth and jobs are counted.
//
// sanitize is idempotent, so that function text exported by Snapshot can
// be sanitized again by Restore.
func (s *Shell) sanitize(node syntax.Node) error {
	procSubstInParams(node)
	var err error
	psN := 0
	syntax.Walk(node, func(n syntax.Node) bool {
		if err != nil {
			return false
		}
		switch n := n.(type) {
		case *syntax.Word:
			for i, part := range n.Parts {
				ps, ok := part.(*syntax.ProcSubst)
				if !ok {
					continue
				}
				if ps.Op != syntax.CmdIn {
					err = fmt.Errorf("line %d: process substitution %s...) is not supported in the sandbox: %w",
						ps.Pos().Line(), ps.Op, ErrUnsupported)
					return false
				}
				n.Parts[i] = &syntax.CmdSubst{
					Left: ps.OpPos, Right: ps.Rparen,
					Stmts: []*syntax.Stmt{{Cmd: &syntax.BinaryCmd{
						Op: syntax.Pipe,
						X:  &syntax.Stmt{Cmd: &syntax.Block{Stmts: ps.Stmts}},
						Y:  &syntax.Stmt{Cmd: call(procSubstCmd)},
					}}},
				}
			}
		case *syntax.ParamExp:
			// $$ and $PPID are the interpreter's (interp.ProcessIDs), in
			// every subshell and pipeline stage too.
			if n.Param != nil {
				positionalAbove9(n)
			}
		case *syntax.FuncDecl:
			if n.Body != nil && !hasFrame(n.Body, framePath) {
				n.Body.Redirs = append([]*syntax.Redirect{frameRedirect(framePath)}, n.Body.Redirs...)
			}
		case *syntax.CmdSubst:
			if len(n.Stmts) == 0 || isCatShortcut(n.Stmts) {
				break
			}
			if len(n.Stmts) == 1 && hasFrame(n.Stmts[0], framePath) {
				break
			}
			n.Stmts = []*syntax.Stmt{{
				Cmd:    &syntax.Block{Stmts: n.Stmts},
				Redirs: []*syntax.Redirect{frameRedirect(framePath)},
			}}
		case *syntax.CoprocClause:
			if n.Stmt != nil && !hasFrame(n.Stmt, jobPath) {
				n.Stmt.Redirs = append([]*syntax.Redirect{frameRedirect(jobPath)}, n.Stmt.Redirs...)
			}
		case *syntax.Stmt:
			s.procSubstOut(n, &psN)
			if (n.Background || n.Disown) && !hasFrame(n, jobPath) {
				n.Redirs = append([]*syntax.Redirect{frameRedirect(jobPath)}, n.Redirs...)
			}
		}
		return true
	})
	if err != nil {
		return err
	}
	if pipelineTooLong(node) {
		return &LimitError{Limit: "pipeline length", Max: maxPipeline}
	}
	return guardGoroutines(node)
}

// procSubstInParams finds `<(cmds)` in the word of an unquoted
// ${x:-word} (and the other operators with a word): the parser reads it
// there as literal text, bash as a process substitution. The word is
// printed and parsed again as the words of a command line, whose parts,
// joined by spaces (which the expansion splits at anyway), replace it.
func procSubstInParams(node syntax.Node) {
	var visit func(quoted bool) func(syntax.Node) bool
	visit = func(quoted bool) func(syntax.Node) bool {
		return func(n syntax.Node) bool {
			switch n := n.(type) {
			case *syntax.DblQuoted:
				for _, p := range n.Parts {
					syntax.Walk(p, visit(true))
				}
				return false
			case *syntax.CmdSubst:
				for _, st := range n.Stmts {
					syntax.Walk(st, visit(false))
				}
				return false
			case *syntax.ParamExp:
				if !quoted && n.Exp != nil && n.Exp.Word != nil {
					reparseProcSubst(n.Exp.Word)
				}
			}
			return true
		}
	}
	syntax.Walk(node, visit(false))
}

func reparseProcSubst(w *syntax.Word) {
	found := false
	for _, p := range w.Parts {
		if l, ok := p.(*syntax.Lit); ok && strings.Contains(l.Value, "<(") {
			found = true
		}
	}
	if !found {
		return
	}
	var sb strings.Builder
	if err := syntax.NewPrinter().Print(&sb, w); err != nil {
		return
	}
	f, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(": "+sb.String()), "")
	if err != nil || len(f.Stmts) != 1 {
		return
	}
	ce, ok := f.Stmts[0].Cmd.(*syntax.CallExpr)
	if !ok || len(ce.Assigns) > 0 || len(ce.Args) < 2 || len(f.Stmts[0].Redirs) > 0 {
		return
	}
	var parts []syntax.WordPart
	for i, a := range ce.Args[1:] {
		if i > 0 {
			parts = append(parts, &syntax.Lit{Value: " "})
		}
		parts = append(parts, a.Parts...)
	}
	w.Parts = parts
}

// guardGoroutines replaces what the interpreter runs in its own goroutines
// (the left side of a pipeline, a background job) by a guardCmd call
// holding its source. Only the outermost sites are replaced: the guard
// itself applies guardGoroutines to its source when it runs (see
// Shell.guard), so the text of a statement is never quoted into another
// guard's text (nested quoting would grow exponentially with depth).
func guardGoroutines(node syntax.Node) error {
	type site struct {
		stage *syntax.Stmt // a pipeline stage to guard in place
		bg    *syntax.Stmt
	}
	var sites []site
	// guardLeft collects the stages of the left side of pipe that run in
	// goroutines. A left side that is itself a pipeline, (a | b) | c, is
	// not guarded whole: each of its stages is, so that the interpreter
	// still sees the pipeline and gives PIPESTATUS a status per stage.
	var guardLeft func(pipe *syntax.BinaryCmd)
	guardLeft = func(pipe *syntax.BinaryCmd) {
		if inner, ok := barePipe(pipe.X); ok {
			guardLeft(inner)
			if !isGuard(inner.Y) {
				sites = append(sites, site{stage: inner.Y}) // runs in the goroutine of pipe.X
			}
			return
		}
		if !isGuard(pipe.X) {
			sites = append(sites, site{stage: pipe.X})
		}
	}
	var visit func(n syntax.Node) bool
	visit = func(n syntax.Node) bool {
		switch n := n.(type) {
		case *syntax.BinaryCmd:
			if n.Op == syntax.Pipe || n.Op == syntax.PipeAll {
				guardLeft(n)
				syntax.Walk(n.Y, visit) // runs in the current goroutine
				return false
			}
		case *syntax.Stmt:
			if (n.Background || n.Disown) && !isGuardCall(n.Cmd) {
				sites = append(sites, site{bg: n})
				return false
			}
		case *syntax.CoprocClause:
			if n.Stmt != nil && !isGuardCall(n.Stmt.Cmd) {
				sites = append(sites, site{bg: n.Stmt}) // runs in a goroutine too
				return false
			}
		}
		return true
	}
	syntax.Walk(node, visit)
	for _, st := range sites {
		if st.stage != nil {
			g, err := guardStmt(st.stage)
			if err != nil {
				return err
			}
			*st.stage = *g
			continue
		}
		// Keep the job frame on the outer statement (it is opened in the
		// job's goroutine before the guard runs); the rest goes inside.
		inner := *st.bg
		inner.Background, inner.Disown = false, false
		var outer []*syntax.Redirect
		if hasFrame(&inner, jobPath) {
			outer, inner.Redirs = inner.Redirs[:1], inner.Redirs[1:]
		}
		g, err := guardStmt(&inner)
		if err != nil {
			return err
		}
		st.bg.Cmd = g.Cmd
		st.bg.Redirs = outer
		st.bg.Negated = false
	}
	return nil
}

// barePipe returns the pipeline st runs when st is nothing more.
func barePipe(st *syntax.Stmt) (*syntax.BinaryCmd, bool) {
	b, ok := st.Cmd.(*syntax.BinaryCmd)
	if !ok || (b.Op != syntax.Pipe && b.Op != syntax.PipeAll) || st.Negated || st.Background ||
		st.Coprocess || st.Disown || len(st.Redirs) > 0 {
		return nil, false
	}
	return b, true
}

// maxPipeline bounds the commands of one pipeline: each runs in its own
// goroutine with its own OS pipe.
const maxPipeline = 256

// pipelineTooLong reports a pipeline of more than maxPipeline commands.
func pipelineTooLong(node syntax.Node) bool {
	memo := map[*syntax.BinaryCmd]int{}
	var size func(st *syntax.Stmt) int
	size = func(st *syntax.Stmt) int {
		b, ok := st.Cmd.(*syntax.BinaryCmd)
		if !ok || (b.Op != syntax.Pipe && b.Op != syntax.PipeAll) {
			return 1
		}
		if n, ok := memo[b]; ok {
			return n
		}
		n := size(b.X) + size(b.Y)
		memo[b] = n
		return n
	}
	long := false
	syntax.Walk(node, func(n syntax.Node) bool {
		if st, ok := n.(*syntax.Stmt); ok && !long && size(st) > maxPipeline {
			long = true
		}
		return !long
	})
	return long
}

func guardStmt(st *syntax.Stmt) (*syntax.Stmt, error) {
	var sb strings.Builder
	if err := syntax.NewPrinter().Print(&sb, st); err != nil {
		return nil, err
	}
	q, err := syntax.Quote(sb.String(), syntax.LangBash)
	if err != nil {
		return nil, err
	}
	// The call sits on the statement's line, so that the guard runs the
	// statement on it too (see lineOffset).
	f, err := parse(lineOffset(int(st.Pos().Line()))+guardCmd+" "+q, "")
	if err != nil || len(f.Stmts) != 1 {
		return nil, fmt.Errorf("guard: %v", err)
	}
	return f.Stmts[0], nil
}

// maxLineOffset bounds the line numbers that guarded code keeps.
const maxLineOffset = 10000

// lineOffset is the newlines that put source parsed again (by a guard) on
// line n, so that messages name the line bash names.
func lineOffset(n int) string {
	if n <= 1 || n > maxLineOffset {
		return ""
	}
	return strings.Repeat("\n", n-1)
}

func isGuard(st *syntax.Stmt) bool { return st != nil && isGuardCall(st.Cmd) }

func isGuardCall(cmd syntax.Command) bool {
	ce, ok := cmd.(*syntax.CallExpr)
	return ok && len(ce.Args) == 2 && len(ce.Assigns) == 0 && ce.Args[0].Lit() == guardCmd
}

// wrapFrame puts all of file's statements in one block that opens a frame,
// so that eval and source count against Limits.MaxDepth.
func wrapFrame(file *syntax.File) {
	if len(file.Stmts) == 0 {
		return
	}
	if len(file.Stmts) == 1 && hasFrame(file.Stmts[0], framePath) {
		return
	}
	file.Stmts = []*syntax.Stmt{{
		Cmd:    &syntax.Block{Stmts: file.Stmts},
		Redirs: []*syntax.Redirect{frameRedirect(framePath)},
	}}
}

func call(name string) *syntax.CallExpr {
	return &syntax.CallExpr{Args: []*syntax.Word{lit(name)}}
}

func lit(s string) *syntax.Word {
	return &syntax.Word{Parts: []syntax.WordPart{&syntax.Lit{Value: s}}}
}

func frameRedirect(p string) *syntax.Redirect {
	return &syntax.Redirect{Op: syntax.AppOut, Word: lit(p)}
}

func hasFrame(st *syntax.Stmt, p string) bool {
	return len(st.Redirs) > 0 && st.Redirs[0].Op == syntax.AppOut && st.Redirs[0].N == nil &&
		st.Redirs[0].Word.Lit() == p
}

// isCatShortcut reports the `$(<file)` form, which the interpreter reads
// directly and which must stay a lone redirection.
func isCatShortcut(stmts []*syntax.Stmt) bool {
	if len(stmts) != 1 {
		return false
	}
	st := stmts[0]
	return st.Cmd == nil && len(st.Redirs) == 1 && st.Redirs[0].Op == syntax.RdrIn
}

// sanitizeSource parses src, sanitizes it and wraps it in a frame, and
// returns the text to hand to the interpreter (eval, source, trap).
func (s *Shell) sanitizeSource(src, name string, frame bool) (string, error) {
	file, err := parse(src, name)
	if err != nil {
		return "", err
	}
	if err := s.sanitize(file); err != nil {
		return "", err
	}
	if frame {
		wrapFrame(file)
	}
	var sb strings.Builder
	if err := syntax.NewPrinter().Print(&sb, file); err != nil {
		return "", err
	}
	return sb.String(), nil
}

// positionalAbove9 rewrites ${10}, ${11}... (a plain expansion of a
// positional parameter past 9) as ${@:N:1}: interp v3.14.1 expands them to
// nothing, bash to the Nth argument.
func positionalAbove9(n *syntax.ParamExp) {
	v := n.Param.Value
	if len(v) < 2 || n.Short || n.Excl || n.Length || n.Width || n.Index != nil || n.Slice != nil || n.Repl != nil || n.Names != 0 || n.Exp != nil {
		return
	}
	for i := 0; i < len(v); i++ {
		if v[i] < '0' || v[i] > '9' {
			return
		}
	}
	if v[0] == '0' {
		return
	}
	lit := func(s string) *syntax.Word {
		return &syntax.Word{Parts: []syntax.WordPart{&syntax.Lit{ValuePos: n.Param.ValuePos, ValueEnd: n.Param.ValueEnd, Value: s}}}
	}
	n.Param = &syntax.Lit{ValuePos: n.Param.ValuePos, ValueEnd: n.Param.ValueEnd, Value: "@"}
	n.Slice = &syntax.Slice{Offset: lit(v), Length: lit("1")}
}

// procSubstOut rewrites a statement whose own arguments or redirections
// hold `>(cmds)`:
//
//	cmd >(c1) > >(c2)
//
// becomes
//
//	{ p1=$(__wasmbox_procsubst_out); p2=$(...); cmd "$p1" > "$p2"; st=$?
//	  { c1; } < "$p1"; { c2; } < "$p2"; __wasmbox_status "$st"; }
//
// (with hidden variable names): cmd writes into VFS temporary files, and
// each cmds reads its file once cmd has ended, with the statement's own
// standard output, which is where bash's process substitution writes too.
// Unlike bash's, cmds does not run while cmd does: output that cmd and
// cmds interleave in bash comes in order here, and a cmd that waits for
// cmds to read would wait forever (none of the common uses, tee >(...)
// and > >(tee log), does).
func (s *Shell) procSubstOut(st *syntax.Stmt, n *int) {
	type sub struct {
		name  string
		stmts []*syntax.Stmt
	}
	var subs []sub
	fix := func(w *syntax.Word) {
		if w == nil {
			return
		}
		for i, part := range w.Parts {
			ps, ok := part.(*syntax.ProcSubst)
			if !ok || ps.Op != syntax.CmdOut {
				continue
			}
			*n++
			name := fmt.Sprintf("__wasmbox_psout%d", *n)
			subs = append(subs, sub{name, ps.Stmts})
			w.Parts[i] = &syntax.DblQuoted{Parts: []syntax.WordPart{&syntax.ParamExp{Param: &syntax.Lit{Value: name}}}}
		}
	}
	if ce, ok := st.Cmd.(*syntax.CallExpr); ok {
		for _, w := range ce.Args {
			fix(w)
		}
	}
	for _, r := range st.Redirs {
		fix(r.Word)
	}
	if len(subs) == 0 {
		return
	}
	stName := fmt.Sprintf("__wasmbox_psst%d", *n)
	var stmts []*syntax.Stmt
	for _, sb := range subs {
		stmts = append(stmts, &syntax.Stmt{Cmd: &syntax.CallExpr{Assigns: []*syntax.Assign{{
			Name:  &syntax.Lit{Value: sb.name},
			Value: &syntax.Word{Parts: []syntax.WordPart{&syntax.CmdSubst{Stmts: []*syntax.Stmt{{Cmd: call(procSubstOutCmd)}}}}},
		}}}})
	}
	stmts = append(stmts, &syntax.Stmt{Cmd: st.Cmd, Redirs: st.Redirs},
		&syntax.Stmt{Cmd: &syntax.CallExpr{Assigns: []*syntax.Assign{{
			Name:  &syntax.Lit{Value: stName},
			Value: &syntax.Word{Parts: []syntax.WordPart{&syntax.ParamExp{Short: true, Param: &syntax.Lit{Value: "?"}}}},
		}}}})
	for _, sb := range subs {
		stmts = append(stmts, &syntax.Stmt{
			Cmd: &syntax.Block{Stmts: sb.stmts},
			Redirs: []*syntax.Redirect{{Op: syntax.RdrIn, Word: &syntax.Word{Parts: []syntax.WordPart{
				&syntax.DblQuoted{Parts: []syntax.WordPart{&syntax.ParamExp{Param: &syntax.Lit{Value: sb.name}}}}}}}},
		})
	}
	stmts = append(stmts, &syntax.Stmt{Cmd: &syntax.CallExpr{Args: []*syntax.Word{lit(statusCmd),
		{Parts: []syntax.WordPart{&syntax.DblQuoted{Parts: []syntax.WordPart{&syntax.ParamExp{Param: &syntax.Lit{Value: stName}}}}}}}}})
	st.Cmd, st.Redirs = &syntax.Block{Stmts: stmts}, nil
}
