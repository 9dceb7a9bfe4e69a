package shell

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/wasmbox/wasmbox/internal/sh/interp"

	"github.com/wasmbox/wasmbox/internal/fserr"
)

// Paths the shell serves itself instead of the VFS.
const (
	// framePath is opened by the redirection sanitize adds to function
	// bodies and command substitutions: the open counts a frame against
	// Limits.MaxDepth, the close releases it.
	framePath = "/dev/wasmbox/frame"
	// jobPath does the same for background jobs (Limits.MaxJobs), and
	// lets finishRun wait for them.
	jobPath = "/dev/wasmbox/job"
	// sourcePrefix names the sanitized text of a sourced file; the NUL
	// byte keeps the interpreter's host stat of it from reaching the OS.
	sourcePrefix = "/\x00wasmbox-source/"
)

func (s *Shell) curRun() *runState {
	if rs := s.rs.Load(); rs != nil {
		return rs
	}
	// Outside a Run (never in practice): a cancelled state, so nothing runs.
	rs := s.newRunState(context.Background())
	rs.cancel(context.Canceled)
	return rs
}

func (s *Shell) openHandler(ctx context.Context, p string, flag int, perm os.FileMode) (io.ReadWriteCloser, error) {
	hc := interp.HandlerCtx(ctx)
	rs := s.curRun()
	switch p {
	case framePath:
		if n := rs.frames.Add(1); n > rs.lim.MaxDepth {
			rs.frames.Add(-1)
			return nil, rs.fail(&LimitError{Limit: "nesting depth", Max: rs.lim.MaxDepth})
		}
		return &fwdWriter{w: hc.Stdout, release: func() { rs.frames.Add(-1) }}, nil
	case jobPath:
		if n := rs.jobs.Add(1); n > rs.lim.MaxJobs {
			rs.jobs.Add(-1)
			return nil, rs.fail(&LimitError{Limit: "background jobs", Max: rs.lim.MaxJobs})
		}
		rs.wg.Add(1)
		return &fwdWriter{w: hc.Stdout, release: func() { rs.jobs.Add(-1); rs.wg.Done() }}, nil
	case "/dev/null":
		return nullFile{}, nil
	case "/dev/stdout", "/dev/fd/1":
		return &fwdWriter{w: hc.Stdout}, nil
	case "/dev/stderr", "/dev/fd/2":
		return &fwdWriter{w: hc.Stderr}, nil
	case "/dev/stdin", "/dev/fd/0":
		if hc.Stdin == nil {
			return nullFile{}, nil
		}
		return readerFile{hc.Stdin}, nil
	}
	if rest, ok := strings.CutPrefix(p, "/dev/fd/"); ok {
		// /dev/fd/N above 2 is the shell's own descriptor N, as bash
		// emulates it (the shell's WASI descriptor 3 is its preopened
		// root, not the script's fd 3).
		if n, err := strconv.Atoi(rest); err == nil && n > 2 {
			r, w, open := hc.FD(n)
			switch {
			case !open:
				return nil, openError(hc, p, syscall.ENOENT)
			case flag&(os.O_WRONLY|os.O_RDWR) != 0:
				if w == nil {
					return nil, openError(hc, p, syscall.EBADF)
				}
				return &fwdWriter{w: w}, nil
			case r == nil:
				return nil, openError(hc, p, syscall.EBADF)
			default:
				return readerFile{r}, nil
			}
		}
	}
	if strings.HasPrefix(p, sourcePrefix) {
		if v, ok := s.sources.LoadAndDelete(p); ok {
			return readerFile{strings.NewReader(v.(string))}, nil
		}
		return nil, &os.PathError{Op: "open", Path: p, Err: syscall.ENOENT}
	}
	if strings.IndexByte(p, 0) >= 0 {
		return nil, &os.PathError{Op: "open", Path: p, Err: syscall.EINVAL}
	}
	abs := resolve(hc.Dir, p)
	if flag&os.O_CREATE != 0 {
		perm &^= os.FileMode(s.umask.Load())
	}
	f, err := s.cfg.FS.OpenFile(abs, flag, perm)
	if err != nil {
		return nil, openError(hc, p, err)
	}
	if flag&(os.O_WRONLY|os.O_RDWR) != 0 {
		return f, nil
	}
	if fi, err := f.Stat(); err == nil && fi.IsDir() {
		f.Close()
		return nil, &os.PathError{Op: "open", Path: p, Err: syscall.EISDIR}
	}
	if of, ok := f.(*os.File); ok {
		// A file of the operating system (shell.wasm's filesystem is
		// the host's, through WASI): the interpreter and the commands
		// it runs read it directly.
		return of, nil
	}
	// The interpreter turns any reader that is not an *os.File into a pipe
	// fed by a goroutine it does not stop. Feed our own pipe instead, with a
	// goroutine this Run owns: closing the read end (the interpreter does
	// at the end of the statement) ends it.
	pr, pw, err := s.pipe()
	if err != nil {
		f.Close()
		return nil, &os.PathError{Op: "open", Path: p, Err: syscall.EMFILE}
	}
	rs.wg.Go(func() {
		io.Copy(pw, ctxReader{rs.ctx, f})
		f.Close()
		pw.Close()
	})
	return pr, nil
}

// openError is what a failed redirection prints, in bash's words
// ("bash: out/x: No such file or directory", the path as written). It stays
// an *os.PathError, which the interpreter prints before it carries on,
// wrapping the errno for errors.Is.
func openError(hc interp.HandlerContext, p string, err error) error {
	op := "bash:"
	if hc.Pos.IsValid() {
		// A redirection's, as bash -c says it: "bash: line 3: f: ...".
		op = fmt.Sprintf("bash: line %d:", hc.Pos.Line())
	}
	return &os.PathError{Op: op, Path: p, Err: bashErrno{fserr.Errno(err)}}
}

// bashErrno is an errno that prints like C's strerror.
type bashErrno struct{ syscall.Errno }

func (e bashErrno) Error() string { return errText(e.Errno) }
func (e bashErrno) Unwrap() error { return e.Errno }

// pathError makes err an *os.PathError for the user's path: the
// interpreter prints those and sets status 1; any other error type would
// abort the whole script.
func pathError(op, p string, err error) error {
	return &os.PathError{Op: op, Path: p, Err: fserr.Errno(err)}
}

// fwdWriter forwards writes to the stream that was current when it was
// opened, and runs release once when closed.
type fwdWriter struct {
	w       io.Writer
	once    sync.Once
	release func()
}

func (f *fwdWriter) Write(p []byte) (int, error) {
	if f.w == nil {
		return len(p), nil
	}
	return f.w.Write(p)
}
func (f *fwdWriter) Read([]byte) (int, error) { return 0, syscall.EBADF }
func (f *fwdWriter) Close() error {
	if f.release != nil {
		f.once.Do(f.release)
	}
	return nil
}

// unwrapWriter returns the stream under any fwdWriter layers.
func unwrapWriter(w io.Writer) io.Writer {
	for {
		f, ok := w.(*fwdWriter)
		if !ok {
			return w
		}
		w = f.w
	}
}

type nullFile struct{}

func (nullFile) Read([]byte) (int, error)    { return 0, io.EOF }
func (nullFile) Write(p []byte) (int, error) { return len(p), nil }
func (nullFile) Close() error                { return nil }

type readerFile struct{ r io.Reader }

func (r readerFile) Read(p []byte) (int, error) { return r.r.Read(p) }
func (readerFile) Write([]byte) (int, error)    { return 0, syscall.EBADF }
func (readerFile) Close() error                 { return nil }

func (s *Shell) readDirHandler(ctx context.Context, p string) ([]fs.DirEntry, error) {
	hc := interp.HandlerCtx(ctx)
	abs := resolve(hc.Dir, p)
	f, err := s.cfg.FS.Open(abs)
	if err != nil {
		return nil, pathError("open", p, err)
	}
	defer f.Close()
	infos, err := f.Readdir(-1)
	if err != nil {
		return nil, pathError("readdirent", p, err)
	}
	entries := make([]fs.DirEntry, len(infos))
	for i, fi := range infos {
		entries[i] = fs.FileInfoToDirEntry(s.sysInfo(fi))
	}
	slices.SortFunc(entries, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	return entries, nil
}

func (s *Shell) statHandler(ctx context.Context, p string, follow bool) (fs.FileInfo, error) {
	hc := interp.HandlerCtx(ctx)
	abs := resolve(hc.Dir, p)
	var fi fs.FileInfo
	var err error
	if follow {
		fi, err = s.cfg.FS.Stat(abs)
	} else {
		fi, _, err = s.cfg.FS.LstatIfPossible(abs)
	}
	if err != nil {
		return nil, pathError("stat", p, err)
	}
	return s.sysInfo(fi), nil
}

// accessHandler answers -r/-w/-x and cd's search check from the VFS mode
// bits and the sandbox user, the way access(2) would.
func (s *Shell) accessHandler(ctx context.Context, p string, mode interp.AccessMode) error {
	hc := interp.HandlerCtx(ctx)
	abs := resolve(hc.Dir, p)
	fi, err := s.cfg.FS.Stat(abs)
	if err != nil {
		return pathError("access", p, err)
	}
	if !s.allowed(fi, mode) {
		return &os.PathError{Op: "access", Path: p, Err: syscall.EACCES}
	}
	return nil
}

func (s *Shell) allowed(fi fs.FileInfo, mode interp.AccessMode) bool {
	perm := uint32(fi.Mode().Perm())
	if s.uid == 0 {
		// root reads and writes anything, and executes what has any x bit
		// (or any directory).
		return mode&interp.AccessExec == 0 || fi.IsDir() || perm&0o111 != 0
	}
	uid, gid := uint32(0), uint32(0)
	if st, ok := fi.Sys().(interp.FileSys); ok {
		uid, gid = st.Owner()
	}
	var bits uint32
	switch {
	case uid == s.uid:
		bits = perm >> 6
	case gid == s.gid:
		bits = perm >> 3
	default:
		bits = perm
	}
	return uint32(mode)&^(bits&7) == 0
}

// sysInfo is fi as the interpreter reads it: -O, -G, -ef and -N look at
// an interp.FileSys in Sys(), which the VFS's stat has (and the guest
// filesystem's); a file without one belongs to root.
func (s *Shell) sysInfo(fi fs.FileInfo) fs.FileInfo {
	if _, ok := fi.Sys().(interp.FileSys); ok {
		return fi
	}
	return sysFileInfo{FileInfo: fi}
}

type sysFileInfo struct{ fs.FileInfo }

func (i sysFileInfo) Sys() any { return rootOwned{i.FileInfo} }

type rootOwned struct{ fi fs.FileInfo }

func (rootOwned) Owner() (uid, gid uint32)  { return 0, 0 }
func (rootOwned) DevIno() (dev, ino uint64) { return 0, 0 }
func (r rootOwned) AccessTime() time.Time   { return r.fi.ModTime() }

// lookPath finds an executable for name like a shell searching PATH, in
// the VFS, then asks the Executor if it is a Resolver.
func (s *Shell) lookPath(dir, pathVar, name string) (string, bool) {
	if name == "" {
		return "", false
	}
	if strings.Contains(name, "/") {
		p := resolve(dir, name)
		if s.isExecutable(p) {
			return name, true
		}
		return "", false
	}
	for _, elem := range strings.Split(pathVar, ":") {
		if elem == "" {
			elem = "."
		}
		p := resolve(dir, elem+"/"+name)
		if s.isExecutable(p) {
			if !strings.HasPrefix(elem, "/") {
				return elem + "/" + name, true
			}
			return p, true
		}
	}
	if r, ok := s.cfg.Executor.(Resolver); ok {
		return r.Resolve(name)
	}
	return "", false
}

func (s *Shell) isExecutable(p string) bool {
	fi, err := s.cfg.FS.Stat(p)
	return err == nil && fi.Mode().IsRegular() && s.allowed(fi, interp.AccessExec)
}

// findSource finds the file `source name` reads: a name with a slash is a
// path; otherwise PATH is searched (any readable regular file), then the
// current directory, as bash does.
func (s *Shell) findSource(dir, pathVar, name string) string {
	if strings.Contains(name, "/") {
		return resolve(dir, name)
	}
	for _, elem := range strings.Split(pathVar, ":") {
		if elem == "" {
			continue
		}
		p := resolve(dir, elem+"/"+name)
		if fi, err := s.cfg.FS.Stat(p); err == nil && fi.Mode().IsRegular() {
			return p
		}
	}
	return resolve(dir, name)
}
