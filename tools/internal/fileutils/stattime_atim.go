//go:build linux || openbsd || dragonfly || solaris || illumos

package fileutils

import (
	"syscall"
	"time"
)

// statTimes returns the access and status-change times of s (Linux names
// them Atim and Ctim, as do OpenBSD, DragonFly and the Solarises).
func statTimes(s *syscall.Stat_t) (atime, ctime time.Time) {
	return time.Unix(s.Atim.Unix()), time.Unix(s.Ctim.Unix())
}
