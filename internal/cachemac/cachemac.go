// Package cachemac authenticates what wasmbox reads back from its on-disk
// caches: the machine code of wazero's compilation cache and the prepared
// modules of the runtime. Anything whose content decides what code runs, or
// what memory a guest starts with, is written with a MAC under a key that
// only the host user can read, and is trusted only if the MAC checks out on
// the bytes after they were copied into memory the host owns.
//
// The key is 32 random bytes in a file of the cache directory (KeyFile),
// created 0600 by the first process and read by the next ones. The cache
// directory, key included, is refused as (or under) a sandbox mount, so no
// guest reads or writes it; the MAC is what makes an entry that something
// else wrote (a mount of an ancestor that slipped through, a restored or
// shared cache directory, another program of the same user) a cache miss
// instead of code the host runs.
//
// The MAC is GMAC (AES-256-GCM with an empty plaintext, the entry as
// additional data) with a random 96-bit nonce per entry, under a key derived
// for each entry name: HMAC-SHA256(key, name). Binding the name means a
// valid entry copied over another is a miss too. GMAC runs at the speed of
// AES-NI and carry-less multiplication (about 3 GB/s on one core where
// HMAC-SHA256 with SHA-NI does 0.6–1 GB/s and BLAKE2b 0.37 GB/s: see
// BenchmarkMAC), and a warm start verifies tens of MB of machine code.
// GMAC is a sound MAC as long as a (key, nonce) pair never tags two
// messages: nonces are random (crypto/rand) and keys differ per entry name.
package cachemac

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// KeyFile is the name of the key's file in a cache directory.
const KeyFile = "mac.key"

// KeySize is the size of a key.
const KeySize = 32

// Size is the size of a tag: a 12-byte nonce followed by a 16-byte GMAC.
const Size = 12 + 16

// MAC tags and verifies cache entries under one key. It is safe for
// concurrent use.
type MAC struct {
	key []byte
}

// New returns a MAC under key, which must be KeySize bytes.
func New(key []byte) (*MAC, error) {
	if len(key) != KeySize {
		return nil, fmt.Errorf("cachemac: key of %d bytes, want %d", len(key), KeySize)
	}
	return &MAC{key: append([]byte(nil), key...)}, nil
}

// aead is the GCM of the entry named name.
func (m *MAC) aead(name []byte) cipher.AEAD {
	h := hmac.New(sha256.New, m.key)
	h.Write([]byte("wasmbox cache entry\x00"))
	h.Write(name)
	block, err := aes.NewCipher(h.Sum(nil))
	if err != nil {
		panic(err) // a 32-byte key is always valid
	}
	g, err := cipher.NewGCMWithRandomNonce(block)
	if err != nil {
		panic(err)
	}
	return g
}

// Sum returns the tag (Size bytes) of content stored under name.
func (m *MAC) Sum(name, content []byte) []byte {
	return m.aead(name).Seal(nil, nil, nil, content)
}

// Verify reports whether tag is the tag of content under name. Call it on
// a copy the host owns (not on a file mapping), and use that same copy.
func (m *MAC) Verify(name, content, tag []byte) bool {
	if len(tag) != Size {
		return false
	}
	_, err := m.aead(name).Open(nil, nil, tag, content)
	return err == nil
}

// Split splits a file's bytes into the content and its trailing tag; ok is
// false if b is shorter than a tag.
func Split(b []byte) (content, tag []byte, ok bool) {
	if len(b) < Size {
		return nil, nil, false
	}
	return b[:len(b)-Size], b[len(b)-Size:], true
}

// LoadKey returns the key of the cache directory dir, whose key file it
// creates (32 random bytes, mode 0600, written to a temporary file and
// linked into place, so that concurrent processes agree on one key) if there
// is none. A key file that is not a regular file of this user, is readable
// or writable by others, or has the wrong size is an error: its entries
// cannot be trusted, and the message says which file to remove.
func LoadKey(dir string) ([]byte, error) {
	p := filepath.Join(dir, KeyFile)
	for attempt := 0; ; attempt++ {
		key, err := readKey(p)
		if err == nil {
			return key, nil
		}
		if !errors.Is(err, fs.ErrNotExist) || attempt > 0 {
			return nil, err
		}
		if err := createKey(dir, p); err != nil && !errors.Is(err, fs.ErrExist) {
			return nil, fmt.Errorf("cache key %s: %w", p, err)
		}
	}
}

func readKey(p string) ([]byte, error) {
	f, err := os.OpenFile(p, os.O_RDONLY|oNoFollow, 0)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
		return nil, fmt.Errorf("cache key %s: %w (remove it, or move the cache with --cachedir)", p, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("cache key %s: %w", p, err)
	}
	if !fi.Mode().IsRegular() || !private(fi) || fi.Size() != KeySize {
		return nil, fmt.Errorf("cache key %s is not a private %d-byte file of this user (mode %v): remove it", p, KeySize, fi.Mode())
	}
	key := make([]byte, KeySize)
	if _, err := f.ReadAt(key, 0); err != nil {
		return nil, fmt.Errorf("cache key %s: %w", p, err)
	}
	return key, nil
}

func createKey(dir, p string) error {
	key := make([]byte, KeySize)
	if _, err := rand.Read(key); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, ".mac.key-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer os.Remove(tmp)
	if err := f.Chmod(0o600); err != nil {
		f.Close()
		return err
	}
	_, werr := f.Write(key)
	serr := f.Sync()
	if cerr := f.Close(); werr != nil || serr != nil || cerr != nil {
		return errors.Join(werr, serr, cerr)
	}
	return os.Link(tmp, p) // fails with ErrExist if another process won
}
