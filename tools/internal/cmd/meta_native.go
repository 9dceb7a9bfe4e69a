//go:build !wasip1

package cmd

import (
	"io/fs"
	"os"
)

func statMeta(name string, follow bool) (fs.FileInfo, error) {
	if follow {
		return os.Stat(name)
	}
	return os.Lstat(name)
}

func chmodMeta(name string, mode fs.FileMode) error { return os.Chmod(name, mode) }

func chownMeta(name string, uid, gid int, follow bool) error {
	if follow {
		return os.Chown(name, uid, gid)
	}
	return os.Lchown(name, uid, gid)
}
