package runtime

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/wasmbox/wasmbox/internal/cachemac"
)

// DefaultCacheMaxBytes is the size bound of the on-disk cache when
// Config.CacheMaxBytes is 0: 4 GiB. wasmbox's own modules take about
// 300 MB compiled (both of wazero's caches and the prepared entries), so
// the bound holds them several times over while a stream of hostile
// modules (each run may bring new ones) cannot fill the disk.
const DefaultCacheMaxBytes int64 = 4 << 30

// inUseSlack is how far before a compile's start an entry's modification
// time may be and still count as used by that compile: file systems stamp
// times from a coarse clock that lags time.Now by up to a tick.
const inUseSlack = time.Second

// staleTemp is the age after which a temporary file of the cache (an entry
// being written) counts as left behind by a writer that died.
const staleTemp = time.Hour

// CacheDir is the directory of the runtime's on-disk cache (compiled code,
// prepared modules, the key of their MACs), or "" if it has none. Nothing a
// guest can write may cover it: sandbox refuses such mounts.
func (r *Runtime) CacheDir() string { return r.cacheDir }

// trimCache bounds the on-disk cache after a compile that started at
// start, best effort.
func (r *Runtime) trimCache(start time.Time) {
	if r.cacheDir == "" || r.cacheMax < 0 {
		return
	}
	_, _ = TrimCache(r.cacheDir, r.cacheMax, start.Add(-inUseSlack))
}

// touch marks the cache entry p used now: the modification time of an
// entry is its last use, which TrimCache evicts by.
func touch(p string) {
	now := time.Now()
	_ = os.Chtimes(p, now, now)
}

// TrimCache removes the least recently used entries of the cache directory
// dir (the oldest modification time first: a read sets it, see touch)
// until the regular files under dir total at most max bytes. Entries used
// at or after since (those a compile in flight has read or written) are
// never removed, so the bound can be exceeded by them; neither is the key
// (cachemac.KeyFile), nor a temporary file being written (one younger than
// an hour): writers rename complete entries into place, so a reader never
// sees part of one. It returns the removed paths, oldest first.
func TrimCache(dir string, max int64, since time.Time) ([]string, error) {
	type entry struct {
		path  string
		size  int64
		mtime time.Time
	}
	var entries []entry
	var total int64
	now := time.Now()
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil // removed meanwhile (another process trimming)
			}
			return err
		}
		if !d.Type().IsRegular() {
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			return nil
		}
		total += fi.Size()
		name := d.Name()
		switch {
		case p == filepath.Join(dir, cachemac.KeyFile):
			return nil
		case strings.HasSuffix(name, ".tmp") || strings.HasPrefix(name, ".tmp-"):
			if now.Sub(fi.ModTime()) < staleTemp {
				return nil
			}
		case !fi.ModTime().Before(since):
			return nil
		}
		entries = append(entries, entry{p, fi.Size(), fi.ModTime()})
		return nil
	})
	if err != nil || total <= max {
		return nil, err
	}
	sort.SliceStable(entries, func(i, j int) bool { return entries[i].mtime.Before(entries[j].mtime) })
	var removed []string
	for _, e := range entries {
		if total <= max {
			break
		}
		if err := os.Remove(e.path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			continue
		}
		total -= e.size
		removed = append(removed, e.path)
	}
	return removed, nil
}

// DefaultCacheDir is the cache directory New uses when Config.CacheDir is
// empty: os.UserCacheDir()/wasmbox/compile, else (no home directory) a
// directory of the temp dir private to this user. It creates nothing.
func DefaultCacheDir() string {
	if base, err := os.UserCacheDir(); err == nil {
		return filepath.Join(base, "wasmbox", "compile")
	}
	return filepath.Join(os.TempDir(), fmt.Sprintf("wasmbox-%d", os.Getuid()), "compile")
}
