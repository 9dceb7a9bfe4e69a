package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/wasmbox/wasmbox/sandbox"
)

func newShellCmd(a *app) *cobra.Command {
	var f sandboxFlags
	cmd := &cobra.Command{
		Use:   "shell [flags]",
		Short: "An interactive sandbox session that keeps its state between lines",
		Long: `Read bash lines from standard input and run each in one sandbox's GNU
bash: the working directory, variables, functions, aliases, options and
files persist between lines (as in a bash script, aliases expand after
shopt -s expand_aliases). A line ending in a backslash, or an unfinished construct (an open
quote, if/while/for without its end), continues on the next line. Ctrl-D
or exit ends the session; its exit status is that of the last line. Each
line has the --timeout limit.

At a terminal, Ctrl-C ends the running line (status 130; the state is the
one before that line) or drops the line being typed, and a new prompt
follows: the session and its state stay. When the input is not a
terminal, Ctrl-C ends the session, as it ends a bash script.

--audit-log appends every line run to a hash-chained audit log, always
redacted; --redact-output redacts the output too, including the values
earlier lines assigned to secret-named variables.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			// SIGTERM ends the session. SIGINT (Ctrl-C) does too when
			// the input is not a terminal (a script piped in, as for
			// bash); at a terminal it ends the running line, or drops
			// the line being typed, and the session goes on.
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGTERM)
			defer stop()
			var intr chan os.Signal
			if isTerminal(a.stdin) {
				intr = make(chan os.Signal, 1)
				signal.Notify(intr, os.Interrupt)
				defer signal.Stop(intr)
			} else {
				var stopInt context.CancelFunc
				ctx, stopInt = signal.NotifyContext(ctx, os.Interrupt)
				defer stopInt()
			}
			sb, closeAll, err := a.newSandbox(ctx, &f)
			if err != nil {
				return err
			}
			defer closeAll()
			stdout, stderr := terminalSafe(a.stdout), terminalSafe(a.stderr)
			defer flushTerminalSafe(stdout, stderr)
			a.exit = replLoop(ctx, sb, a.stdin, stdout, stderr, a.stderrIsTerminal(), intr)
			return nil
		},
	}
	f.register(cmd)
	return cmd
}

// isTerminal reports whether r is a terminal.
func isTerminal(r io.Reader) bool {
	f, ok := r.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// exitInterrupted is the status of a line ended by Ctrl-C, as bash gives
// a command killed by SIGINT (128+2).
const exitInterrupted = 130

// replLoop runs lines from in until EOF and returns the last exit status.
// Each value on intr (Ctrl-C) cancels the running line (its status is
// 130; the session's state is the one before it) or, between lines, drops
// the unfinished input; the session goes on. intr may be nil.
func replLoop(ctx context.Context, sb *sandbox.Sandbox, in io.Reader, stdout, stderr io.Writer, prompt bool, intr <-chan os.Signal) int {
	if in == nil {
		return 0
	}
	// Lines are read on their own goroutine so that a prompt waiting
	// for input still hears Ctrl-C. The lines run with no standard
	// input, so reading ahead takes nothing from them. The reader ends
	// at the input's end; when the session ends first it stays blocked
	// in Read until the process exits (an idle terminal read).
	lines := make(chan string)
	var readErr error
	done := make(chan struct{})
	defer close(done)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(in)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			select {
			case lines <- sc.Text():
			case <-done:
				return
			}
		}
		readErr = sc.Err() // read once lines is closed
	}()
	last := 0
	var pending strings.Builder
	for {
		if prompt {
			if pending.Len() == 0 {
				fmt.Fprintf(stderr, "%s$ ", sb.Dir())
			} else {
				fmt.Fprint(stderr, "> ")
			}
		}
		var line string
		var ok bool
		select {
		case <-ctx.Done():
			return last
		case <-intr:
			// The terminal dropped the typed line and echoed ^C.
			pending.Reset()
			if prompt {
				fmt.Fprintln(stderr)
			}
			continue
		case line, ok = <-lines:
		}
		if !ok {
			if readErr != nil { // set before lines was closed
				fmt.Fprintf(stderr, "wasmbox: reading input: %v\n", readErr)
			}
			break
		}
		pending.WriteString(line)
		pending.WriteByte('\n')
		if strings.HasSuffix(line, "\\") || sandbox.Incomplete(pending.String()) {
			continue
		}
		script := pending.String()
		pending.Reset()
		if strings.TrimSpace(script) == "" {
			continue
		}
		res, interrupted, err := runLine(ctx, sb, script, stdout, stderr, intr)
		if err != nil {
			fmt.Fprintf(stderr, "wasmbox: %v\n", err)
			return 1
		}
		last = res.ExitCode
		if interrupted && ctx.Err() == nil {
			last = exitInterrupted
			if prompt {
				fmt.Fprintln(stderr)
			}
			continue
		}
		if ctx.Err() != nil || res.Exited {
			break
		}
	}
	return last
}

// runLine runs one line in its own context, which a value on intr
// cancels: Ctrl-C ends the line, not the session.
func runLine(ctx context.Context, sb *sandbox.Sandbox, script string, stdout, stderr io.Writer, intr <-chan os.Signal) (res sandbox.Result, interrupted bool, err error) {
	lineCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := make(chan struct{})
	watched := make(chan bool, 1)
	go func() {
		select {
		case <-intr:
			cancel()
			watched <- true
		case <-stop:
			watched <- false
		}
	}()
	res, err = sb.Stream(lineCtx, script, nil, stdout, stderr)
	close(stop)
	return res, <-watched, err
}
