package filecache

import (
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"time"

	"github.com/wasmbox/wasmbox/internal/cachemac"
)

// MaxEntrySize bounds the size of an entry that Load reads (wasmbox patch):
// a file larger than that is a miss, never an allocation of its size.
const MaxEntrySize = 4 << 30

// New returns a new Cache implemented by fileCache, whose entries carry a
// MAC under mac (wasmbox patch; see package cachemac).
func New(dir string, mac *cachemac.MAC) Cache {
	return newFileCache(dir, mac)
}

func newFileCache(dir string, mac *cachemac.MAC) *fileCache {
	return &fileCache{dirPath: dir, mac: mac}
}

// fileCache persists compiled functions into dirPath.
//
// wasmbox patch: every entry ends with a MAC (cachemac) of its content and
// name, verified by Load on its copy in memory; an entry whose MAC fails is
// a miss.
type fileCache struct {
	dirPath string
	mac     *cachemac.MAC
}

func (fc *fileCache) path(key Key) string {
	return path.Join(fc.dirPath, hex.EncodeToString(key[:]))
}

func (fc *fileCache) Load(key Key, alloc func(int) ([]byte, error), free func([]byte)) (content []byte, ok bool, err error) {
	p := fc.path(key)
	f, err := os.Open(p)
	if errors.Is(err, os.ErrNotExist) {
		return nil, false, nil
	} else if err != nil {
		return nil, false, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, false, err
	}
	size := fi.Size()
	if !fi.Mode().IsRegular() || size < cachemac.Size || size > MaxEntrySize {
		_ = os.Remove(p)
		return nil, false, nil
	}
	buf, err := alloc(int(size))
	if err != nil {
		return nil, false, fmt.Errorf("compilationcache: allocating %d bytes: %w", size, err)
	}
	// The bytes are verified where they are used: in buf, which only this
	// process writes. A writer of the file changes nothing of buf after
	// ReadFull; if it changed the file during the read, the MAC fails.
	if _, err := io.ReadFull(f, buf); err != nil {
		free(buf)
		return nil, false, nil // shrunk while read: a miss
	}
	body, tag, _ := cachemac.Split(buf)
	if !fc.mac.Verify(key[:], body, tag) {
		free(buf)
		_ = os.Remove(p)
		return nil, false, nil
	}
	// The modification time is the last use, for the cache's LRU bound.
	now := time.Now()
	_ = os.Chtimes(p, now, now)
	return buf[:len(body):len(buf)], true, nil
}

func (fc *fileCache) Add(key Key, content []byte) (err error) {
	path := fc.path(key)
	dirPath, fileName := filepath.Split(path)

	file, err := os.CreateTemp(dirPath, fileName+".*.tmp")
	if err != nil {
		return
	}
	defer func() {
		file.Close()
		if err != nil {
			_ = os.Remove(file.Name())
		}
	}()
	if _, err = file.Write(content); err != nil {
		return
	}
	if _, err = file.Write(fc.mac.Sum(key[:], content)); err != nil {
		return
	}
	if err = file.Sync(); err != nil {
		return
	}
	if err = file.Close(); err != nil {
		return
	}
	err = os.Rename(file.Name(), path)
	return
}

func (fc *fileCache) Delete(key Key) (err error) {
	err = os.Remove(fc.path(key))
	if errors.Is(err, os.ErrNotExist) {
		err = nil
	}
	return
}
