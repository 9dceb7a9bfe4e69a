package wazevo

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"unsafe"

	"github.com/wasmbox/wasmbox/third_party/wazero/experimental"
	"github.com/wasmbox/wasmbox/third_party/wazero/internal/engine/wazevo/backend"
	"github.com/wasmbox/wasmbox/third_party/wazero/internal/engine/wazevo/ssa"
	"github.com/wasmbox/wasmbox/third_party/wazero/internal/engine/wazevo/wazevoapi"
	"github.com/wasmbox/wasmbox/third_party/wazero/internal/filecache"
	"github.com/wasmbox/wasmbox/third_party/wazero/internal/platform"
	"github.com/wasmbox/wasmbox/third_party/wazero/internal/u32"
	"github.com/wasmbox/wasmbox/third_party/wazero/internal/u64"
	"github.com/wasmbox/wasmbox/third_party/wazero/internal/wasm"
)

var crc = crc32.MakeTable(crc32.Castagnoli)

// fileCacheKey returns a key for the file cache.
// In order to avoid collisions with the existing compiler, we do not use m.ID directly,
// but instead we rehash it with magic.
func fileCacheKey(m *wasm.Module) (ret filecache.Key) {
	s := sha256.New()
	s.Write(m.ID[:])
	s.Write(magic)
	// Write the CPU features so that we can cache the compiled module for the same CPU.
	// This prevents the incompatible CPU features from being used.
	cpu := platform.CpuFeatures.Raw()
	// Reuse the `ret` buffer to write the first 8 bytes of the CPU features so that we can avoid the allocation.
	binary.LittleEndian.PutUint64(ret[:8], cpu)
	s.Write(ret[:8])
	// Finally, write the hash to the ret buffer.
	s.Sum(ret[:0])
	return
}

func (e *engine) addCompiledModule(module *wasm.Module, cm *compiledModule) (c *compiledModule, err error) {
	c = e.addCompiledModuleToMemory(module, cm)
	if !module.IsHostModule && e.fileCache != nil {
		err = e.addCompiledModuleToCache(module, c)
	}
	return
}

func (e *engine) getCompiledModule(module *wasm.Module, listeners []experimental.FunctionListener, ensureTermination bool) (cm *compiledModule, ok bool, err error) {
	cm, ok = e.getCompiledModuleFromMemory(module, true)
	if ok {
		return
	}
	cm, ok, err = e.getCompiledModuleFromCache(module)
	if ok {
		cm.parent = e
		cm.module = module
		cm.sharedFunctions = e.sharedFunctions
		cm.ensureTermination = ensureTermination
		cm.offsets = wazevoapi.NewModuleContextOffsetData(module, len(listeners) > 0)
		if len(listeners) > 0 {
			cm.listeners = listeners
			cm.listenerBeforeTrampolines = make([]*byte, len(module.TypeSection))
			cm.listenerAfterTrampolines = make([]*byte, len(module.TypeSection))
			for i := range module.TypeSection {
				typ := &module.TypeSection[i]
				before, after := e.getListenerTrampolineForType(typ)
				cm.listenerBeforeTrampolines[i] = before
				cm.listenerAfterTrampolines[i] = after
			}
		}
		e.addCompiledModuleToMemory(module, cm)
		ssaBuilder := ssa.NewBuilder()
		machine := newMachine()
		be := backend.NewCompiler(context.Background(), machine, ssaBuilder)
		cm.executables.compileEntryPreambles(module, machine, be)

		// Set the finalizer.
		e.setFinalizer(cm.executables, executablesFinalizer)
	}
	return
}

func (e *engine) addCompiledModuleToMemory(m *wasm.Module, cm *compiledModule) *compiledModule {
	e.mux.Lock()
	defer e.mux.Unlock()
	if c, ok := e.compiledModules[m.ID]; ok {
		c.refCount++
		return c.compiledModule
	}
	e.compiledModules[m.ID] = &compiledModuleWithCount{compiledModule: cm, refCount: 1}
	if len(cm.executable) > 0 {
		e.addCompiledModuleToSortedList(cm)
	}
	return cm
}

func (e *engine) getCompiledModuleFromMemory(module *wasm.Module, increaseRefCount bool) (cm *compiledModule, ok bool) {
	e.mux.Lock()
	defer e.mux.Unlock()

	cmWithCount, ok := e.compiledModules[module.ID]
	if ok {
		cm = cmWithCount.compiledModule
		if increaseRefCount {
			cmWithCount.refCount++
		}
	}
	return
}

func (e *engine) addCompiledModuleToCache(module *wasm.Module, cm *compiledModule) (err error) {
	if e.fileCache == nil || module.IsHostModule {
		return
	}
	err = e.fileCache.Add(fileCacheKey(module), serializeCompiledModule(e.wazeroVersion, cm))
	return
}

func (e *engine) getCompiledModuleFromCache(module *wasm.Module) (cm *compiledModule, hit bool, err error) {
	if e.fileCache == nil || module.IsHostModule {
		return
	}

	// Check if the entries exist in the external cache. wasmbox patch: the
	// file cache reads the whole entry into an anonymous mapping and
	// verifies its MAC there (filecache.Cache.Load); the code is made
	// executable in that same mapping, never mapped from the file.
	var content []byte
	content, hit, err = e.fileCache.Load(fileCacheKey(module), platform.MmapScratch, freeScratch)
	if !hit || err != nil {
		return
	}

	// Otherwise, we hit the cache on external cache.
	// We retrieve *code structures from `cached`.
	var staleCache bool
	cm, staleCache, err = deserializeCompiledModule(e.wazeroVersion, content)
	if err != nil {
		// wasmbox patch: an entry that does not decode (truncated, or
		// corrupted: its checksum fails) is a miss, removed so that the
		// module is compiled and stored again; upstream returns the error,
		// and CompileModule of that module fails until the cache was cleared.
		_ = e.fileCache.Delete(fileCacheKey(module))
		return nil, false, nil
	} else if staleCache {
		return nil, false, e.fileCache.Delete(fileCacheKey(module))
	}
	return
}

func freeScratch(b []byte) { _ = platform.MunmapScratch(b) }

// magic starts a cache file. wasmbox patch: "WAZEVK" (upstream "WAZEVO")
// marks the layout with the machine code at a multiple of
// platform.CodeFileAlignment from the start (so that it is page-aligned in
// the anonymous mapping the whole entry is read into) and the entry's MAC
// at the end (filecache); it is also part of fileCacheKey, so layouts never
// share a file.
var magic = []byte{'W', 'A', 'Z', 'E', 'V', 'K'}

func serializeCompiledModule(wazeroVersion string, cm *compiledModule) []byte {
	buf := bytes.NewBuffer(nil)
	// First 6 byte: WAZEVO header.
	buf.Write(magic)
	// Next 1 byte: length of version:
	buf.WriteByte(byte(len(wazeroVersion)))
	// Version of wazero.
	buf.WriteString(wazeroVersion)
	// Number of *code (== locally defined functions in the module): 4 bytes.
	buf.Write(u32.LeBytes(uint32(len(cm.functionOffsets))))
	for _, offset := range cm.functionOffsets {
		// The offset of this function in the executable (8 bytes).
		buf.Write(u64.LeBytes(uint64(offset)))
	}
	// The length of code segment (8 bytes).
	buf.Write(u64.LeBytes(uint64(len(cm.executable))))
	// wasmbox patch: zeros up to the alignment the code is read at.
	buf.Write(make([]byte, codePadding(buf.Len())))
	// Append the native code.
	buf.Write(cm.executable)
	// Append checksum.
	checksum := crc32.Checksum(cm.executable, crc)
	buf.Write(u32.LeBytes(checksum))
	if sm := cm.sourceMap; len(sm.executableOffsets) > 0 {
		buf.WriteByte(1) // indicates that source map is present.
		l := len(sm.wasmBinaryOffsets)
		buf.Write(u64.LeBytes(uint64(l)))
		executableAddr := uintptr(unsafe.Pointer(&cm.executable[0]))
		for i := 0; i < l; i++ {
			buf.Write(u64.LeBytes(sm.wasmBinaryOffsets[i]))
			// executableOffsets is absolute address, so we need to subtract executableAddr.
			buf.Write(u64.LeBytes(uint64(sm.executableOffsets[i] - executableAddr)))
		}
	} else {
		buf.WriteByte(0) // indicates that source map is not present.
	}
	// Catch clause table: number of try_tables (4 bytes), then for each:
	//   clause count (4 bytes), then for each clause: kind (1 byte) + tagIndex (4 bytes).
	buf.Write(u32.LeBytes(uint32(len(cm.catchClauseTable))))
	for _, clauses := range cm.catchClauseTable {
		buf.Write(u32.LeBytes(uint32(len(clauses))))
		for _, c := range clauses {
			buf.WriteByte(c.Kind)
			buf.Write(u32.LeBytes(c.TagIndex))
		}
	}
	return buf.Bytes()
}

// deserializeCompiledModule decodes an entry that the file cache has read
// into region (an anonymous mapping from platform.MmapScratch whose MAC it
// verified; region[:len(region)] is the content, region[:cap(region)] the
// mapping). wasmbox patch: it takes the mapping over. On success the code is
// the page-aligned part of region at its offset, made executable where it
// is (the rest of the mapping is released); on failure, or a stale entry,
// the whole mapping is released.
func deserializeCompiledModule(wazeroVersion string, region []byte) (cm *compiledModule, staleCache bool, err error) {
	keep := false
	defer func() {
		if !keep {
			_ = platform.MunmapScratch(region[:cap(region)])
		}
	}()
	reader := bytes.NewReader(region)
	cacheHeaderSize := len(magic) + 1 /* version size */ + len(wazeroVersion) + 4 /* number of functions */

	// Read the header before the native code.
	header := make([]byte, cacheHeaderSize)
	n, err := io.ReadFull(reader, header)
	if err != nil {
		return nil, false, fmt.Errorf("compilationcache: error reading header: %v", err)
	}

	if n != cacheHeaderSize {
		return nil, false, fmt.Errorf("compilationcache: invalid header length: %d", n)
	}

	if !bytes.Equal(header[:len(magic)], magic) {
		return nil, false, fmt.Errorf(
			"compilationcache: invalid magic number: got %s but want %s", magic, header[:len(magic)])
	}

	// Check the version compatibility.
	versionSize := int(header[len(magic)])

	cachedVersionBegin, cachedVersionEnd := len(magic)+1, len(magic)+1+versionSize
	if cachedVersionEnd >= len(header) {
		staleCache = true
		return
	} else if cachedVersion := string(header[cachedVersionBegin:cachedVersionEnd]); cachedVersion != wazeroVersion {
		staleCache = true
		return
	}

	functionsNum := binary.LittleEndian.Uint32(header[len(header)-4:])
	if uint64(functionsNum)*8 > uint64(reader.Len()) {
		return nil, false, fmt.Errorf("compilationcache: %d functions in an entry of %d bytes", functionsNum, len(region))
	}
	cm = &compiledModule{functionOffsets: make([]int, functionsNum), executables: &executables{}}

	var eightBytes [8]byte
	for i := uint32(0); i < functionsNum; i++ {
		// Read the offset of each function in the executable.
		var offset uint64
		if offset, err = readUint64(reader, &eightBytes); err != nil {
			err = fmt.Errorf("compilationcache: error reading func[%d] executable offset: %v", i, err)
			return
		}
		cm.functionOffsets[i] = int(offset)
	}

	executableLen, err := readUint64(reader, &eightBytes)
	if err != nil {
		err = fmt.Errorf("compilationcache: error reading executable size: %v", err)
		return
	}

	pos := int64(cacheHeaderSize) + 8*int64(functionsNum) + 8
	codeAt := pos + int64(codePadding(int(pos)))
	codeEnd := codeAt + int64(executableLen)
	if executableLen > uint64(len(region)) || codeEnd+4 > int64(len(region)) {
		return nil, false, fmt.Errorf("compilationcache: executable of %d bytes in an entry of %d bytes", executableLen, len(region))
	}
	for _, off := range cm.functionOffsets {
		if off < 0 || uint64(off) > executableLen {
			return nil, false, fmt.Errorf("compilationcache: function offset %d outside the executable (%d bytes)", off, executableLen)
		}
	}
	if got, want := crc32.Checksum(region[codeAt:codeEnd], crc), binary.LittleEndian.Uint32(region[codeEnd:]); got != want {
		return nil, false, fmt.Errorf("compilationcache: checksum mismatch (expected %d, got %d)", want, got)
	}
	// What follows the code (source map, catch clauses) is read from a
	// copy, as the mapping around the code is released.
	rest := bytes.NewReader(bytes.Clone(region[codeEnd+4:]))
	if executableLen > 0 {
		executable, err := platform.KeepScratchRange(region[:cap(region)], int(codeAt), int(codeEnd))
		keep = true // KeepScratchRange has taken the mapping over
		if err != nil {
			return nil, false, fmt.Errorf("compilationcache: %v", err)
		}
		cm.executable = executable
	}
	_, staleCache, err = deserializeRest(cm, rest)
	if err == nil && !staleCache && len(cm.executable) > 0 {
		// Executable only now: the bytes were verified in this mapping,
		// which no other process can write, and are never written again.
		err = platform.MprotectCodeSegment(cm.executable)
	}
	if (err != nil || staleCache) && len(cm.executable) > 0 {
		_ = platform.MunmapCodeSegment(cm.executable)
		cm.executable = nil
	}
	if err != nil || staleCache {
		return nil, staleCache, err
	}
	return cm, false, nil
}

// codePadding is the number of zero bytes after a cache file's first n bytes
// that puts the machine code at a multiple of platform.CodeFileAlignment.
func codePadding(n int) int {
	return (platform.CodeFileAlignment - n%platform.CodeFileAlignment) % platform.CodeFileAlignment
}

// deserializeRest reads what follows the machine code (source map, catch
// clauses) into cm, whose executable is set.
func deserializeRest(cm *compiledModule, reader io.Reader) (_ *compiledModule, staleCache bool, err error) {
	var eightBytes [8]byte
	if _, err := io.ReadFull(reader, eightBytes[:1]); err != nil {
		return nil, false, fmt.Errorf("compilationcache: error reading source map presence: %v", err)
	}

	if eightBytes[0] == 1 {
		sm := &cm.sourceMap
		sourceMapLen, err := readUint64(reader, &eightBytes)
		if err != nil {
			err = fmt.Errorf("compilationcache: error reading source map length: %v", err)
			return nil, false, err
		}
		executableOffset := uintptr(unsafe.Pointer(&cm.executable[0]))
		for i := uint64(0); i < sourceMapLen; i++ {
			wasmBinaryOffset, err := readUint64(reader, &eightBytes)
			if err != nil {
				err = fmt.Errorf("compilationcache: error reading source map[%d] wasm binary offset: %v", i, err)
				return nil, false, err
			}
			executableRelativeOffset, err := readUint64(reader, &eightBytes)
			if err != nil {
				err = fmt.Errorf("compilationcache: error reading source map[%d] executable offset: %v", i, err)
				return nil, false, err
			}
			sm.wasmBinaryOffsets = append(sm.wasmBinaryOffsets, wasmBinaryOffset)
			// executableOffsets is absolute address, so we need to add executableOffset.
			sm.executableOffsets = append(sm.executableOffsets, uintptr(executableRelativeOffset)+executableOffset)
		}
	}
	// Catch clause table.
	if _, err = io.ReadFull(reader, eightBytes[:4]); err != nil {
		// Treat old cache entries without catch clause data as stale (trigger recompile).
		return nil, true, nil
	}
	tableLen := binary.LittleEndian.Uint32(eightBytes[:4])
	if tableLen > 0 {
		cm.catchClauseTable = make([][]wazevoapi.CatchClauseInstance, tableLen)
		for i := uint32(0); i < tableLen; i++ {
			if _, err = io.ReadFull(reader, eightBytes[:4]); err != nil {
				return nil, false, fmt.Errorf("compilationcache: error reading catch clause count for try_table[%d]: %v", i, err)
			}
			clauseCount := binary.LittleEndian.Uint32(eightBytes[:4])
			clauses := make([]wazevoapi.CatchClauseInstance, clauseCount)
			for j := uint32(0); j < clauseCount; j++ {
				if _, err = io.ReadFull(reader, eightBytes[:5]); err != nil {
					return nil, false, fmt.Errorf("compilationcache: error reading catch clause[%d][%d]: %v", i, j, err)
				}
				clauses[j] = wazevoapi.CatchClauseInstance{
					Kind:     eightBytes[0],
					TagIndex: binary.LittleEndian.Uint32(eightBytes[1:5]),
				}
			}
			cm.catchClauseTable[i] = clauses
		}
	}
	return cm, false, nil
}

// readUint64 strictly reads an uint64 in little-endian byte order, using the
// given array as a buffer. This returns io.EOF if less than 8 bytes were read.
func readUint64(reader io.Reader, b *[8]byte) (uint64, error) {
	s := b[0:8]
	// wasmbox patch: io.ReadFull, as the reader is buffered (a short read
	// at the end of the buffer is not the end of the file).
	if _, err := io.ReadFull(reader, s); err != nil {
		if err == io.ErrUnexpectedEOF {
			err = io.EOF
		}
		return 0, err
	}

	// Read the u64 from the underlying buffer.
	ret := binary.LittleEndian.Uint64(s)
	return ret, nil
}
