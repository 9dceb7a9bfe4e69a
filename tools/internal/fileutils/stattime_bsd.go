//go:build darwin || freebsd || netbsd

package fileutils

import (
	"syscall"
	"time"
)

// statTimes returns the access and status-change times of s (the BSDs and
// macOS name them Atimespec and Ctimespec; their Birthtimespec, the
// creation time, has no place in statx, which follows Linux's stat).
func statTimes(s *syscall.Stat_t) (atime, ctime time.Time) {
	return time.Unix(s.Atimespec.Unix()), time.Unix(s.Ctimespec.Unix())
}
