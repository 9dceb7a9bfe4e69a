//go:build !linux && !darwin && !freebsd && !netbsd

package vfs

import "os"

// hostStat fills a *Stat from what a portable FileInfo offers.
func hostStat(fi os.FileInfo) *Stat {
	return &Stat{Nlink: 1, Atime: fi.ModTime(), Mtime: fi.ModTime(), Ctime: fi.ModTime()}
}
