//go:build unix

package audit

import (
	"context"
	"errors"
	"os"
	"syscall"
	"time"
)

// lockFile takes an exclusive (or shared) flock(2) on f. While another
// process holds it, it retries (without blocking in the kernel, so that ctx and
// lockWait bound the wait) until ctx ends or lockWait has passed.
func lockFile(ctx context.Context, f *os.File, exclusive bool) error {
	how := syscall.LOCK_SH
	if exclusive {
		how = syscall.LOCK_EX
	}
	deadline := time.NewTimer(lockWait)
	defer deadline.Stop()
	for pause := time.Millisecond; ; {
		err := syscall.Flock(int(f.Fd()), how|syscall.LOCK_NB)
		switch {
		case err == nil:
			return nil
		case errors.Is(err, syscall.EINTR):
			continue
		case !errors.Is(err, syscall.EWOULDBLOCK):
			return err
		}
		select {
		case <-ctx.Done():
			return context.Cause(ctx)
		case <-deadline.C:
			return errLockTimeout
		case <-time.After(pause):
		}
		pause = min(2*pause, 20*time.Millisecond)
	}
}

func unlockFile(f *os.File) { syscall.Flock(int(f.Fd()), syscall.LOCK_UN) }
