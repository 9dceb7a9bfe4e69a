//go:build darwin || freebsd || netbsd

package vfs

import (
	"syscall"
	"time"
)

// statTimes: macOS and the BSDs name the times Atimespec, Mtimespec and
// Ctimespec.
func statTimes(st *syscall.Stat_t) (atime, mtime, ctime time.Time) {
	return time.Unix(int64(st.Atimespec.Sec), int64(st.Atimespec.Nsec)),
		time.Unix(int64(st.Mtimespec.Sec), int64(st.Mtimespec.Nsec)),
		time.Unix(int64(st.Ctimespec.Sec), int64(st.Ctimespec.Nsec))
}
