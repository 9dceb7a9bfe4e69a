//go:build !unix

package platform

// MmapScratch allocates size bytes of read-write memory for a compilation
// cache entry (wasmbox patch; see the unix version).
func MmapScratch(size int) ([]byte, error) { return MmapCodeSegment(size) }

// MunmapScratch releases memory from MmapScratch.
func MunmapScratch(b []byte) error { return MunmapCodeSegment(b) }

// KeepScratchRange returns b[from:to] in a code segment of its own (a copy:
// these systems cannot release part of an allocation) and releases b. The
// result is released by MunmapCodeSegment.
func KeepScratchRange(b []byte, from, to int) ([]byte, error) {
	defer MunmapCodeSegment(b)
	if from < 0 || to <= from || to > len(b) {
		return nil, errBadRange
	}
	code, err := MmapCodeSegment(to - from)
	if err != nil {
		return nil, err
	}
	copy(code, b[from:to])
	return code, nil
}
