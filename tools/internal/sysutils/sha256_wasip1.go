//go:build wasip1

package sysutils

import "github.com/wasmbox/wasmbox/tools/internal/sha256u"

// newSHA256 and newSHA224 are the unrolled pure-Go hashes of sha256u:
// crypto/sha256 has no assembly for wasm, and its generic block function
// is 2.5-3x slower there.
var newSHA256, newSHA224 = sha256u.New, sha256u.New224
