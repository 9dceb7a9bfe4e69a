package runtime

import "github.com/wasmbox/wasmbox/internal/wasmbin"

// minMemoryPages returns the initial page count of the first memory a
// module defines (0 if none), shared or not, for the memory limit check
// before instantiation. A binary this scan cannot follow yields 0 and no
// error: wazero's decoder reports what is wrong with it.
func minMemoryPages(b []byte) (uint32, error) {
	secs, err := wasmbin.Sections(b)
	if err != nil {
		return 0, nil
	}
	mems, err := wasmbin.Memories(secs)
	if err != nil || len(mems) == 0 || mems[0].Min > 1<<32-1 {
		return 0, nil
	}
	return uint32(mems[0].Min), nil
}
