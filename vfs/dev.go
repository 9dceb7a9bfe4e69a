package vfs

import (
	"crypto/rand"
	"io"
	"sync"
	"syscall"
)

// Device is the behaviour of a character device node (see MemFS.Mknod).
// Reads and writes go straight to it; offsets, Seek and Truncate have no
// effect on a device. A Device must be safe for concurrent use.
type Device interface {
	Read(p []byte) (int, error)
	Write(p []byte) (int, error)
}

type nullDev struct{}

func (nullDev) Read([]byte) (int, error)    { return 0, io.EOF }
func (nullDev) Write(p []byte) (int, error) { return len(p), nil }

type zeroDev struct{}

func (zeroDev) Read(p []byte) (int, error)  { clear(p); return len(p), nil }
func (zeroDev) Write(p []byte) (int, error) { return len(p), nil }

// DevNull reads as end of file and discards writes, like /dev/null.
var DevNull Device = nullDev{}

// DevZero reads as an endless run of zero bytes and discards writes, like
// /dev/zero.
var DevZero Device = zeroDev{}

type fullDev struct{}

func (fullDev) Read(p []byte) (int, error)  { clear(p); return len(p), nil }
func (fullDev) Write(p []byte) (int, error) { return 0, syscall.ENOSPC }

// DevFull reads as an endless run of zero bytes and fails every write
// with ENOSPC, like /dev/full: the device that tests a program's handling
// of a full disk.
var DevFull Device = fullDev{}

type randDev struct {
	mu sync.Mutex
	r  io.Reader
}

func (d *randDev) Read(p []byte) (int, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return io.ReadFull(d.r, p)
}

func (d *randDev) Write(p []byte) (int, error) { return len(p), nil }

// DevRandom returns a device that reads from r (crypto/rand when r is
// nil), like /dev/random and /dev/urandom. Writes are discarded. Reads are
// serialized, so r needs not be safe for concurrent use; a seeded r makes
// the device deterministic.
func DevRandom(r io.Reader) Device {
	if r == nil {
		r = rand.Reader
	}
	return &randDev{r: r}
}
