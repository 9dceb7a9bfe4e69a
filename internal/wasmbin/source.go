package wasmbin

import (
	"crypto/sha256"
	"embed"
	"io/fs"
	"sort"
	"sync"
)

// The package's own source, to fingerprint its rewrites: a cache of their
// output keyed by SourceHash can never serve what an older rewrite made.
//
//go:embed *.go
var source embed.FS

var sourceHash = sync.OnceValue(func() [32]byte {
	h := sha256.New()
	names, _ := fs.Glob(source, "*.go")
	sort.Strings(names)
	for _, n := range names {
		b, _ := source.ReadFile(n)
		h.Write([]byte(n))
		h.Write([]byte{0})
		h.Write(b)
		h.Write([]byte{0})
	}
	var sum [32]byte
	h.Sum(sum[:0])
	return sum
})

// SourceHash is a SHA-256 of this package's source files: it changes
// whenever a rewrite (InstrumentLoops, PrepareReactor, ApplyCaps, ...)
// may give another output for the same input.
func SourceHash() [32]byte { return sourceHash() }
