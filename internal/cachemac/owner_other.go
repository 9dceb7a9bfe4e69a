//go:build !unix

package cachemac

import "io/fs"

const oNoFollow = 0

// private: Windows has no mode bits to check (the file is created in the
// user's own cache directory).
func private(fs.FileInfo) bool { return true }
