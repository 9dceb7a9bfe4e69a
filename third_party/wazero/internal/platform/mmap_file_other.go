//go:build !unix

package platform

import (
	"errors"
	"os"
)

// MmapCodeSegmentFromFile is not supported here: the caller reads the code.
func MmapCodeSegmentFromFile(f *os.File, offset int64, size int) ([]byte, error) {
	return nil, errors.New("platform: code mapping from a file is not supported")
}
