package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	"github.com/wasmbox/wasmbox/sandbox"
)

// A subcommand is one file of this package that adds its constructor in
// an init function:
//
//	func init() { subcommands = append(subcommands, newRunCmd) }
//
//	func newRunCmd(a *app) *cobra.Command {
//		return &cobra.Command{Use: "run SCRIPT", RunE: func(cmd *cobra.Command, args []string) error {
//			...
//			a.exit = status // the process exit status
//			return nil      // or a.fail(err): "wasmbox: err" on stderr, exit 1
//		}}
//	}
//
// Write to a.stdout / a.stderr and read a.stdin (never os.Std*), so that
// tests can drive the command through doMain.
var subcommands []func(a *app) *cobra.Command

// app is the state shared by the root command and its subcommands.
type app struct {
	stdin          io.Reader
	stdout, stderr io.Writer

	// Persistent flags of the root command.
	cacheDir string
	noCache  bool
	// memoryBudget is the process budget of the engines this process
	// makes (serve and mcp --memory-budget); 0: the machine's default.
	memoryBudget uint64
	cacheMax     string

	// exit is the process exit status once the command has run.
	exit int
	// failed is set by fail: the error is not a usage error.
	failed bool

	// Set when the command runs in the resident engine (internal/engine)
	// for a client process rather than in this process.
	//
	// cwd is the client's working directory, which relative host paths
	// (FILE, --mount HOST, --audit-log) are resolved against; environ is
	// its environment (the redactor's secret host variables).
	cwd     string
	environ []string
	// shared returns the engine's sandbox engine, compiled once for every
	// client.
	shared func(ctx context.Context) (*sandbox.Engine, error)
	// admit is called by run once its flags are parsed, before it reads
	// stdin or writes anything: an errFallback makes the client run the
	// command itself.
	admit func(cmd *cobra.Command, f *sandboxFlags) error
	// script, when set, is the run's script FILE, opened by admit (the
	// engine opens it only if it is a regular file).
	script    *os.File
	scriptErr error // or why it could not open it
	// later, when set, takes work that may wait until the client has its
	// answer (closing the run's sandbox).
	later func(func())
}

// hostPath resolves a host path given on the command line against the
// caller's working directory. It is not cleaned: the kernel resolves
// "link/.." through the link, as it would for the caller.
func (a *app) hostPath(p string) string {
	if a.cwd == "" || filepath.IsAbs(p) {
		return p
	}
	return strings.TrimSuffix(a.cwd, "/") + "/" + p
}

// fail marks err as a failure of the command itself (exit status 1) rather
// than a usage error (exit status 2).
func (a *app) fail(err error) error {
	a.failed = true
	return err
}

// stderrIsTerminal reports whether progress messages would reach a person.
func (a *app) stderrIsTerminal() bool {
	f, ok := a.stderr.(interface{ Stat() (os.FileInfo, error) })
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

func newRoot(a *app) *cobra.Command {
	root := &cobra.Command{
		Use:   "wasmbox",
		Short: "Run untrusted commands and WebAssembly programs in a sandbox",
		Long: `wasmbox runs untrusted commands and WebAssembly (WASI) programs against a
virtual filesystem the host owns, with memory limits and a deadline that
kills a program wherever it is.`,
		SilenceErrors: true,
		SilenceUsage:  true,
	}
	root.CompletionOptions.DisableDefaultCmd = true
	root.PersistentFlags().StringVar(&a.cacheDir, "cachedir", "",
		"directory of the compilation cache (default: the user cache directory + /wasmbox/compile)")
	root.PersistentFlags().BoolVar(&a.noCache, "nocache", false, "do not use the on-disk compilation cache")
	root.PersistentFlags().StringVar(&a.cacheMax, "cachemax", "",
		"size bound of the on-disk compilation cache, least recently used entries evicted first (default 4GiB)")
	ctors := append([]func(*app) *cobra.Command(nil), subcommands...)
	cmds := make([]*cobra.Command, 0, len(ctors))
	for _, c := range ctors {
		cmds = append(cmds, c(a))
	}
	sort.Slice(cmds, func(i, j int) bool { return cmds[i].Name() < cmds[j].Name() })
	root.AddCommand(cmds...)
	root.SetIn(a.stdin)
	root.SetOut(a.stdout)
	root.SetErr(a.stderr)
	return root
}

// doMain runs the wasmbox command line args with the given streams and
// returns the process exit status: the guest's status for commands that
// run one, 1 when the command failed (a one-line "wasmbox: ..." message on
// stderr), 2 for a usage error.
func doMain(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	// Spinning guests must not starve the CLI's own goroutines (signals,
	// the HTTP server of serve, timers): see sandbox.KeepHostResponsive.
	sandbox.KeepHostResponsive()
	a := &app{stdin: stdin, stdout: stdout, stderr: stderr}
	return a.main(context.Background(), args)
}

// main runs the command line args with a's streams; see doMain.
func (a *app) main(ctx context.Context, args []string) int {
	root := newRoot(a)
	root.SetArgs(args)
	if err := root.ExecuteContext(ctx); err != nil {
		var fb errFallback
		if errors.As(err, &fb) {
			return 0 // the engine's caller runs the command itself
		}
		fmt.Fprintf(a.stderr, "wasmbox: %v\n", oneLine(err))
		if a.failed {
			return 1
		}
		return 2
	}
	return a.exit
}

// errFallback is returned by app.admit for a command the resident engine
// leaves to its client.
type errFallback struct{ reason string }

func (e errFallback) Error() string { return "engine: " + e.reason }

// oneLine keeps the first line of an error message.
func oneLine(err error) string {
	s := err.Error()
	for i := 0; i < len(s); i++ {
		if s[i] == '\n' {
			return s[:i]
		}
	}
	return s
}
