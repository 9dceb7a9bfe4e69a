//go:build unix && !linux

package platform

import "unsafe"

const scratchFlags = 0

func adviseScratch(unsafe.Pointer, int) {}
