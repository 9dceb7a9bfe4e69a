package audit

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"
)

// OpenFile opens (or creates, mode 0600) the audit log at path for
// appending, checks the chain already in it (a tampered log is refused,
// with an error matching [ErrTampered]) and returns a Logger that
// continues it. Close the Logger when done.
//
// Several processes may append to the same file at once (concurrent
// "wasmbox run --audit-log L", or a run beside "wasmbox serve"): every
// entry is written under an exclusive lock of the file (flock(2)), taken
// around reading the chain's current head and appending the entry, so
// that the lines of all writers form one chain. Lines another writer
// appended since this Logger's last entry are verified before the new
// entry is chained to them. Only writers that take the lock (Loggers of
// OpenFile) are ordered; a plain [New] over the same file is not.
//
// Waiting for the lock ends with ctx, or after 30 seconds with an error.
// Locking needs flock(2): Linux, macOS and the BSDs. Elsewhere OpenFile
// fails with an error matching [ErrNoLock].
func OpenFile(ctx context.Context, path string, opts ...LoggerOption) (*Logger, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("audit log: %w", err)
	}
	if err := lockFile(ctx, f, true); err != nil {
		f.Close()
		return nil, fmt.Errorf("audit log %s: %w", path, err)
	}
	head, err := VerifyFrom(f, Head{})
	var size int64
	if err == nil {
		size, err = f.Seek(0, io.SeekCurrent)
	}
	unlockFile(f)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("audit log %s: %w", path, err)
	}
	l := New(f, append(opts, WithHead(head))...)
	l.owned = f
	if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() {
		// Another writer can only take part in the chain of a regular
		// file (a device such as /dev/null has no content to chain to).
		l.file = &lockedFile{f: f, path: path, size: size}
	}
	return l, nil
}

// lockWait bounds the wait for another writer's lock; a writer holds it
// only for reading the lines appended since its last entry and writing one.
const lockWait = 30 * time.Second

var errLockTimeout = fmt.Errorf("audit: the log stayed locked by another process for %v", lockWait)

// VerifyFile checks the log file at path from its first entry, as
// [VerifyFrom] does, under a shared lock of the file (when it is a regular
// file), so that it never reads a line an [OpenFile] Logger is still
// appending as an incomplete last line. An error opening the file is
// returned as is.
func VerifyFile(ctx context.Context, path string) (Head, error) {
	f, err := os.Open(path)
	if err != nil {
		return Head{}, err
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() {
		if err := lockFile(ctx, f, false); err != nil {
			return Head{}, fmt.Errorf("audit log %s: %w", path, err)
		}
		defer unlockFile(f)
	}
	return VerifyFrom(f, Head{})
}

// ErrNoLock: the platform has no flock(2), so [OpenFile] cannot order
// concurrent writers.
var ErrNoLock = errors.New("audit: file locking (flock) is not available on this platform")

// lockedFile is the file of an [OpenFile] Logger: size is its length
// after the last line this Logger read or wrote, where the chain's head
// (Logger.head) ends.
type lockedFile struct {
	f    *os.File
	path string
	size int64
}

// Close closes the file of a Logger made by [OpenFile]; for a Logger of
// [New] it does nothing (the caller owns the writer).
func (l *Logger) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.owned == nil {
		return nil
	}
	err := l.owned.Close()
	l.owned, l.file = nil, nil
	l.closed = true
	return err
}

// lockAndSync takes the file's lock and brings l.head up to the end of
// the file, verifying the lines other writers appended since this
// Logger's last look. The caller holds l.mu and must call unlockFile.
func (l *Logger) lockAndSync(ctx context.Context) error {
	lf := l.file
	if err := lockFile(ctx, lf.f, true); err != nil {
		return fmt.Errorf("audit log %s: %w", lf.path, err)
	}
	fi, err := lf.f.Stat()
	if err != nil {
		unlockFile(lf.f)
		return fmt.Errorf("audit log %s: %w", lf.path, err)
	}
	switch {
	case fi.Size() < lf.size:
		unlockFile(lf.f)
		return fmt.Errorf("audit log %s: %w", lf.path, &VerifyError{Line: int(l.head.Seq), Reason: fmt.Sprintf("the file shrank from %d to %d bytes while open", lf.size, fi.Size())})
	case fi.Size() > lf.size:
		head, err := VerifyFrom(io.NewSectionReader(lf.f, lf.size, fi.Size()-lf.size), l.head)
		if err != nil {
			unlockFile(lf.f)
			return fmt.Errorf("audit log %s (lines appended by another writer after entry %d): %w", lf.path, l.head.Seq, err)
		}
		l.head, lf.size = head, fi.Size()
	}
	return nil
}
