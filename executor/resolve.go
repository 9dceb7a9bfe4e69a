package executor

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"strings"
	"syscall"

	"github.com/wasmbox/wasmbox/runtime"
	"github.com/wasmbox/wasmbox/vfs"
)

// MaxModuleSize bounds a module file read from the VFS (compiling is not
// interruptible, so its cost must stay bounded by the input).
const MaxModuleSize = 64 << 20

// command is a resolved argv[0].
type command struct {
	mod *runtime.Module
	// policyName is what Job.Allow is asked about.
	policyName string
	// argv0 replaces argv[0] when the entry names a different command
	// than the base name it was called by (a copied or renamed entry).
	argv0 string
	// leading is inserted after argv[0] (Executor.SetLeadingArgs).
	leading []string
}

// Resolve reports what argv0 would run in fsys with the given environment
// and working directory: the absolute guest path of the file found, or an
// error wrapping ErrNotFound. It is what `command -v` needs.
func Resolve(fsys vfs.FS, env []string, dir, argv0 string) (string, error) {
	if argv0 == "" {
		return "", fmt.Errorf("%w: empty command name", ErrNotFound)
	}
	if dir == "" {
		dir = "/"
	}
	if strings.Contains(argv0, "/") {
		p := argv0
		if !path.IsAbs(p) {
			p = path.Join(dir, p)
		}
		fi, err := fsys.Stat(p)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
				return "", fmt.Errorf("%s: %w", argv0, ErrNotFound)
			}
			return "", fmt.Errorf("%s: %w", argv0, err)
		}
		if fi.IsDir() {
			return "", fmt.Errorf("%s: is a directory: %w", argv0, ErrNotExecutable)
		}
		return path.Clean(p), nil
	}
	search := DefaultPath
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			search = v
		}
	}
	for _, d := range strings.Split(search, ":") {
		if d == "" {
			d = dir
		} else if !path.IsAbs(d) {
			d = path.Join(dir, d)
		}
		p := path.Join(d, argv0)
		if fi, err := fsys.Stat(p); err == nil && fi.Mode().IsRegular() {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s: %w", argv0, ErrNotFound)
}

func (e *Executor) resolve(ctx context.Context, job Job) (*command, error) {
	p, err := Resolve(job.FS, job.Env, job.Dir, job.Argv[0])
	if err != nil {
		return nil, err
	}
	f, err := job.FS.Open(p)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%s: %w", job.Argv[0], ErrNotFound)
		}
		return nil, fmt.Errorf("%s: %w", job.Argv[0], err)
	}
	defer f.Close()
	head := make([]byte, 512)
	n, err := io.ReadFull(f, head)
	if err != nil && err != io.ErrUnexpectedEOF && err != io.EOF {
		return nil, fmt.Errorf("%s: %w", p, err)
	}
	head = head[:n]
	switch {
	case bytes.HasPrefix(head, []byte(EntryPrefix)):
		line, _, _ := bytes.Cut(head[len(EntryPrefix):], []byte("\n"))
		fields := strings.Fields(string(line))
		if len(fields) != 1 {
			return nil, fmt.Errorf("%s: malformed entry %q: %w", p, line, ErrNotExecutable)
		}
		reg := e.lookupCommand(fields[0])
		if reg == nil {
			return nil, fmt.Errorf("%s: command %s is not registered: %w", p, fields[0], ErrNotExecutable)
		}
		mod, err := e.compiled(ctx, reg)
		if err != nil {
			return nil, err
		}
		e.mu.RLock()
		lead := reg.leading[fields[0]]
		e.mu.RUnlock()
		c := &command{mod: mod, policyName: fields[0], leading: lead}
		if path.Base(job.Argv[0]) != fields[0] {
			c.argv0 = fields[0]
		}
		return c, nil
	case runtime.IsWasm(head):
		rest, err := io.ReadAll(io.LimitReader(f, MaxModuleSize-int64(len(head))+1))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		bin := append(head, rest...)
		if len(bin) > MaxModuleSize {
			return nil, fmt.Errorf("%s: module larger than %d bytes: %w", p, MaxModuleSize, ErrNotExecutable)
		}
		mod, err := e.rt.Compile(ctx, p, bin)
		if err != nil {
			return nil, err
		}
		return &command{mod: mod, policyName: p}, nil
	}
	return nil, fmt.Errorf("%s: %w", p, ErrNotExecutable)
}
