package vfs

import (
	"io"
	"os"
	"time"
)

// Quota limits what a MemFS may hold. A zero field means "no limit".
//
// A write that would make the filesystem larger than Bytes behaves as
// write(2) on a full disk: it writes the prefix that fits and returns its
// length with ENOSPC (a short write; io.Writer's contract), and a write
// when nothing fits writes nothing and fails with ENOSPC. A write past
// FileSize likewise writes up to FileSize and fails with EFBIG. So a
// program that streams more than the quota allows keeps exactly what fit
// and then sees "No space left on device". The other operations are all or
// nothing: a truncate that would cross Bytes or FileSize fails with ENOSPC
// or EFBIG and changes nothing, and a create (file, directory, symlink,
// device) past Files fails with ENOSPC. Data already written always stays
// intact.
type Quota struct {
	// Bytes is the total size of all regular files and symlink targets.
	Bytes int64
	// Files is the number of inodes (files, directories, symlinks, device
	// nodes, including the root directory).
	Files int64
	// FileSize is the largest size of one regular file.
	FileSize int64
}

// Default quotas of NewDefault.
const (
	DefaultQuotaBytes = 256 << 20
	DefaultQuotaFiles = 10000
)

// hardMaxFileSize bounds a file even without a quota, so that a sparse
// write at a huge offset is EFBIG instead of an attempt to allocate it.
const hardMaxFileSize = 1 << 40

// Option configures a MemFS (and the layout built by NewDefault). Options
// never fail; a nonsensical value is clamped where it is used.
type Option func(*config)

type config struct {
	clock  func() time.Time
	quota  Quota
	random io.Reader
	uid    uint32
	gid    uint32
	umask  os.FileMode
	dev    uint64 // 0: a new device number (devCounter)
}

func newConfig(opts []Option) config {
	c := config{clock: time.Now, uid: 0, gid: 0}
	for _, o := range opts {
		if o != nil {
			o(&c)
		}
	}
	if c.clock == nil {
		c.clock = time.Now
	}
	return c
}

// WithDevice gives the MemFS (and its forks) the device number dev
// instead of a new one from a process-wide counter: what a guest keeps of
// a stat (st_dev) is then the same in every process and every sandbox, as
// in a deterministic sandbox's memory image. Numbers from
// FixedDeviceBase up are never given by the counter.
func WithDevice(dev uint64) Option {
	return func(c *config) { c.dev = dev }
}

// FixedDeviceBase is the lowest device number for WithDevice that no
// counter-numbered MemFS can have.
const FixedDeviceBase = 1 << 40

// WithClock sets the clock used for atime, mtime and ctime. A deterministic
// sandbox passes a fixed or stepping clock to get reproducible metadata.
func WithClock(now func() time.Time) Option {
	return func(c *config) { c.clock = now }
}

// WithQuota sets the limits of the filesystem. Negative fields count as 0
// (no limit).
func WithQuota(q Quota) Option {
	return func(c *config) {
		if q.Bytes < 0 {
			q.Bytes = 0
		}
		if q.Files < 0 {
			q.Files = 0
		}
		if q.FileSize < 0 {
			q.FileSize = 0
		}
		c.quota = q
	}
}

// WithRandom sets the source of /dev/random and /dev/urandom in the layout
// built by NewDefault (crypto/rand by default). A deterministic sandbox
// passes a seeded generator. The reader is used under a lock, so it needs
// not be safe for concurrent use.
func WithRandom(r io.Reader) Option {
	return func(c *config) { c.random = r }
}

// WithOwner sets the uid and gid given to files created in the filesystem.
func WithOwner(uid, gid uint32) Option {
	return func(c *config) { c.uid, c.gid = uid, gid }
}

// WithUmask sets permission bits cleared from the mode of every file,
// directory and device created (as a process umask does; WASI programs
// cannot pass one). NewDefault uses 022; NewMemFS none.
func WithUmask(mask os.FileMode) Option {
	return func(c *config) { c.umask = mask & os.ModePerm }
}
