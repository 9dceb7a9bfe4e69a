//go:build !wasip1

package sysutils

import "crypto/sha256"

// newSHA256 and newSHA224 are crypto/sha256's natively (assembly); under
// wasip1 see sha256_wasip1.go.
var newSHA256, newSHA224 = sha256.New, sha256.New224
