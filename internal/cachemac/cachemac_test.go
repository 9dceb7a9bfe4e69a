package cachemac

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"os"
	"path/filepath"
	"testing"
)

func TestMAC(t *testing.T) {
	key := bytes.Repeat([]byte{7}, KeySize)
	m, err := New(key)
	if err != nil {
		t.Fatal(err)
	}
	content := []byte("machine code")
	tag := m.Sum([]byte("a"), content)
	if len(tag) != Size || !m.Verify([]byte("a"), content, tag) {
		t.Fatal("a fresh tag does not verify")
	}
	if m.Verify([]byte("b"), content, tag) {
		t.Fatal("a tag verified under another entry name")
	}
	for i := range content {
		c := bytes.Clone(content)
		c[i] ^= 1
		if m.Verify([]byte("a"), c, tag) {
			t.Fatalf("byte %d flipped: verified", i)
		}
	}
	other, _ := New(bytes.Repeat([]byte{8}, KeySize))
	if other.Verify([]byte("a"), content, tag) {
		t.Fatal("a tag verified under another key")
	}
	if m.Verify([]byte("a"), content, tag[:Size-1]) {
		t.Fatal("a short tag verified")
	}
}

func TestLoadKey(t *testing.T) {
	dir := t.TempDir()
	k1, err := LoadKey(dir)
	if err != nil {
		t.Fatal(err)
	}
	k2, err := LoadKey(dir)
	if err != nil || !bytes.Equal(k1, k2) {
		t.Fatalf("second load: %v", err)
	}
	p := filepath.Join(dir, KeyFile)
	os.Chmod(p, 0o640)
	if _, err := LoadKey(dir); err == nil {
		t.Fatal("a key readable by the group was accepted")
	}
	os.Remove(p)
	os.Symlink(filepath.Join(t.TempDir(), "elsewhere"), p)
	if _, err := LoadKey(dir); err == nil {
		t.Fatal("a symlinked key was accepted")
	}
}

var benchData = make([]byte, 40<<20)

// BenchmarkMAC compares the MAC used (GMAC) with HMAC-SHA256 over 40 MB,
// the machine code of a tool module.
func BenchmarkMAC(b *testing.B) {
	key := bytes.Repeat([]byte{7}, KeySize)
	b.Run("GMAC", func(b *testing.B) {
		m, _ := New(key)
		b.SetBytes(int64(len(benchData)))
		for b.Loop() {
			m.Sum([]byte("name"), benchData)
		}
	})
	b.Run("HMAC-SHA256", func(b *testing.B) {
		b.SetBytes(int64(len(benchData)))
		for b.Loop() {
			h := hmac.New(sha256.New, key)
			h.Write(benchData)
			h.Sum(nil)
		}
	})
}
