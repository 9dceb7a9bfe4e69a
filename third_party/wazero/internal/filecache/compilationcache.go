package filecache

import (
	"crypto/sha256"
)

// Cache allows the compiler engine to skip compilation of wasm to machine code
// where doing so is redundant for the same wasm binary and version of wazero.
//
// This augments the default in-memory cache of compiled functions, by
// decoupling it from a wazero.Runtime instance. Concretely, a runtime loses
// its cache once closed. This cache allows the runtime to rebuild its
// in-memory cache quicker, significantly reducing first-hit penalty on a hit.
//
// See New for the example implementation.
type Cache interface {
	// Load is called when the runtime is trying to get the cached compiled
	// functions. wasmbox patch: it replaces upstream's Get, which handed
	// over the file itself. Load reads the whole entry into memory from
	// alloc (memory that only this process can write), verifies its MAC
	// there, after the copy, and returns the content without the MAC: ok
	// is false, with err nil, if there is no entry or its MAC does not
	// check out (a forged or damaged entry is a miss, and is removed). The
	// caller owns content and releases it with free(content[:cap(content)]);
	// Load frees what it
	// allocated itself when it fails.
	//
	// Note: the returned content won't go through the validation pass of Wasm binary
	// which is applied when the binary is compiled from scratch without cache hit.
	Load(key Key, alloc func(size int) ([]byte, error), free func([]byte)) (content []byte, ok bool, err error)
	//
	// Add is called when the runtime is trying to add the new cache entry.
	// The given `content` must be un-modified, and returned as-is in Load.
	// wasmbox patch: the entry is written with its MAC, to a temporary
	// file renamed into place (a concurrent reader sees the old entry or
	// the new one, never part of one).
	//
	// Note: the `content` is ensured to be safe through the validation phase applied on the Wasm binary.
	Add(key Key, content []byte) (err error)
	//
	// Delete is called when the cache on the `key` returned by Get is no longer usable, and
	// must be purged. Specifically, this is called happens when the wazero's version has been changed.
	// For example, that is when there's a difference between the version of compiling wazero and the
	// version of the currently used wazero.
	Delete(key Key) (err error)
}

// Key represents the 256-bit unique identifier assigned to each cache entry.
type Key = [sha256.Size]byte
