// Package cmd is the registry of the multi-call tool program: every command
// registers a Main under its name (and aliases); the program picks one by
// the base name of argv[0].
package cmd

import (
	"fmt"
	"io"
	"os"
	"sort"
	"sync"
)

// Env is what a command runs with. Args[0] is the name it was called by.
// Commands read and write files through the os package (in wasip1 this is
// the sandbox VFS through WASI), and their standard streams through Env, so
// that they can be tested in-process.
type Env struct {
	Args   []string
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
}

// Main is a command's entry point; it returns the exit status.
type Main func(e *Env) int

var (
	mu       sync.RWMutex
	registry = map[string]Main{}
	aliasOf  = map[string]string{}
)

// Register adds a command. It panics on a duplicate name (a programming
// error caught by every test run).
func Register(name string, fn Main, aliases ...string) {
	mu.Lock()
	defer mu.Unlock()
	for _, n := range append([]string{name}, aliases...) {
		if _, dup := registry[n]; dup {
			panic("cmd: duplicate command " + n)
		}
		registry[n] = fn
	}
	for _, a := range aliases {
		aliasOf[a] = name
	}
}

// Lookup returns the command registered under name.
func Lookup(name string) (Main, bool) {
	mu.RLock()
	defer mu.RUnlock()
	fn, ok := registry[name]
	return fn, ok
}

// Names returns every registered name (commands and aliases), sorted.
func Names() []string {
	mu.RLock()
	defer mu.RUnlock()
	names := make([]string, 0, len(registry))
	for n := range registry {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// AliasOf returns the command an alias stands for, or "" if name is not an alias.
func AliasOf(name string) string {
	mu.RLock()
	defer mu.RUnlock()
	return aliasOf[name]
}

// Errorf prints "NAME: message" on stderr the way GNU tools do.
func (e *Env) Errorf(format string, args ...any) {
	fmt.Fprintf(e.Stderr, "%s: %s\n", e.Name(), fmt.Sprintf(format, args...))
}

// Name is the base name the command was called by.
func (e *Env) Name() string {
	if len(e.Args) == 0 {
		return ""
	}
	n := e.Args[0]
	for i := len(n) - 1; i >= 0; i-- {
		if n[i] == '/' {
			return n[i+1:]
		}
	}
	return n
}

// OSEnv returns an Env over the process's own arguments and streams.
func OSEnv() *Env {
	return &Env{Args: os.Args, Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr}
}
