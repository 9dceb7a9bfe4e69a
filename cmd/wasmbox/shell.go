package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/wasmbox/wasmbox/sandbox"
)

func newShellCmd(a *app) *cobra.Command {
	var f sandboxFlags
	cmd := &cobra.Command{
		Use:   "shell [flags]",
		Short: "An interactive sandbox session that keeps its state between lines",
		Long: `Read bash lines from standard input and run each in one sandbox: the
working directory, variables, functions, aliases and files persist between
lines. A line ending in a backslash, or an unfinished construct (an open
quote, if/while/for without its end), continues on the next line. Ctrl-D
ends the session; its exit status is that of the last line. Each line has
the --timeout limit.

--audit-log appends every line run to a hash-chained audit log, always
redacted; --redact-output redacts the output too, including the values
earlier lines assigned to secret-named variables.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, stop := signalContext(cmd.Context())
			defer stop()
			sb, closeAll, err := a.newSandbox(ctx, &f)
			if err != nil {
				return err
			}
			defer closeAll()
			stdout, stderr := terminalSafe(a.stdout), terminalSafe(a.stderr)
			defer flushTerminalSafe(stdout, stderr)
			a.exit = replLoop(ctx, sb, a.stdin, stdout, stderr, a.stderrIsTerminal())
			return nil
		},
	}
	f.register(cmd)
	return cmd
}

// replLoop runs lines from in until EOF and returns the last exit status.
func replLoop(ctx context.Context, sb *sandbox.Sandbox, in io.Reader, stdout, stderr io.Writer, prompt bool) int {
	if in == nil {
		return 0
	}
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
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
		if !sc.Scan() {
			break
		}
		line := sc.Text()
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
		// Each line gets its own context so that Ctrl-C ends the line,
		// not the session.
		lineCtx, cancel := context.WithCancel(ctx)
		res, err := sb.Stream(lineCtx, script, nil, stdout, stderr)
		cancel()
		if err != nil {
			fmt.Fprintf(stderr, "wasmbox: %v\n", err)
			return 1
		}
		last = res.ExitCode
		if ctx.Err() != nil || res.Exited {
			break
		}
	}
	if err := sc.Err(); err != nil {
		fmt.Fprintf(stderr, "wasmbox: reading input: %v\n", err)
	}
	return last
}
