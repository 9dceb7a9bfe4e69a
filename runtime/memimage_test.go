package runtime

import (
	"bytes"
	"testing"
)

// TestMemoryImageSparse: an image keeps the pages that are not zeros and
// not in its dead range, and gives the memory back with zeros elsewhere.
func TestMemoryImageSparse(t *testing.T) {
	mem := make([]byte, 4*65536)
	mem[10] = 1             // page 0
	mem[5*imagePage+7] = 2  // page 5
	mem[6*imagePage] = 3    // page 6: a run with 5
	mem[20*imagePage+1] = 4 // page 20: in the dead range below
	mem[len(mem)-1] = 5     // the last page
	img := newMemoryImage(mem, 40*imagePage, 19*imagePage+100, 40*imagePage)
	if img.Stored() != 4*imagePage || len(img.runs) != 3 {
		t.Fatalf("stored %d in %d runs, want 4 pages in 3 runs", img.Stored(), len(img.runs))
	}
	want := append([]byte(nil), mem...)
	want[20*imagePage+1] = 0
	if !bytes.Equal(img.Bytes(), want) {
		t.Fatal("Bytes differs from the memory outside the dead range")
	}
	// The image is a copy.
	mem[10] = 9
	if img.Bytes()[10] != 1 {
		t.Fatal("the image shares the memory")
	}
	if full := NewMemoryImage(want, 16); full.Stored() != 4*imagePage || !bytes.Equal(full.Bytes(), want) {
		t.Fatalf("NewMemoryImage: stored %d", full.Stored())
	}
	for _, c := range []struct {
		img  *MemoryImage
		want string
	}{
		{NewMemoryImage(make([]byte, 65536+4096), 16), "64 KiB pages"},
		{NewMemoryImage(make([]byte, 65536), 65536+16), "stack pointer"},
		{NewMemoryImage(make([]byte, 65536), 0), "stack pointer"},
		{NewMemoryImage(make([]byte, 2*65536), 16), "limit"},
	} {
		if err := c.img.Check(65536); err == nil || !bytes.Contains([]byte(err.Error()), []byte(c.want)) {
			t.Errorf("Check: %v, want %q", err, c.want)
		}
	}
}
