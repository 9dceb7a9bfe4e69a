package runtime

// minMemoryPages returns the initial page count of the memory a module
// defines (0 if none). A binary this scan cannot follow yields 0 and no
// error: wazero's decoder reports what is wrong with it.
func minMemoryPages(b []byte) (uint32, error) {
	if len(b) < 8 {
		return 0, nil
	}
	p := 8
	for p < len(b) {
		id := b[p]
		p++
		size, n := uleb(b[p:])
		if n == 0 {
			return 0, nil
		}
		p += n
		if size > uint64(len(b)-p) {
			return 0, nil
		}
		payload := b[p : p+int(size)]
		p += int(size)
		if id != 5 {
			continue
		}
		count, n := uleb(payload)
		if n == 0 || count == 0 || n >= len(payload) {
			return 0, nil
		}
		payload = payload[n+1:] // skip the limits flag
		min, n := uleb(payload)
		if n == 0 || min > 1<<32-1 {
			return 0, nil
		}
		return uint32(min), nil
	}
	return 0, nil
}

// uleb decodes an unsigned LEB128 number; n is 0 if b holds none.
func uleb(b []byte) (v uint64, n int) {
	var shift uint
	for i, c := range b {
		if i == 10 {
			return 0, 0
		}
		v |= uint64(c&0x7f) << shift
		if c&0x80 == 0 {
			return v, i + 1
		}
		shift += 7
	}
	return 0, 0
}
