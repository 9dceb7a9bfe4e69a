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

// TestMemoryImageSince: an image taken since another has the memory's
// bytes, shares the pages that did not change and copies the others, and
// keeps no more than twice what it stores alive.
func TestMemoryImageSince(t *testing.T) {
	mem := make([]byte, 4*65536)
	for p := 0; p < 32; p++ {
		mem[p*imagePage+1] = byte(p + 1)
	}
	prev := newMemoryImage(mem, 16, 0, 0)
	mem[3*imagePage+5] = 9  // changed
	mem[40*imagePage] = 7   // new
	mem[31*imagePage+1] = 0 // now zeros
	img := newMemoryImageSince(mem, 32, 0, 0, prev)
	if !bytes.Equal(img.Bytes(), mem) || img.StackPointer() != 32 {
		t.Fatal("the image differs from the memory")
	}
	if img.Stored() != 32*imagePage {
		t.Errorf("stored %d, want 32 pages", img.Stored())
	}
	if img.retained != prev.stored+2*imagePage {
		t.Errorf("retained %d, want prev's %d and 2 new pages", img.retained, prev.stored)
	}
	// The image is a copy: changing the memory changes neither.
	mem[0*imagePage+1] = 99
	mem[3*imagePage+5] = 99
	if b := img.Bytes(); b[1] != 1 || b[3*imagePage+5] != 9 {
		t.Fatal("the image shares the memory")
	}
	if b := prev.Bytes(); b[3*imagePage+5] != 0 || b[31*imagePage+1] != 32 {
		t.Fatal("the earlier image changed")
	}
	// A long chain in which every image keeps one page of each earlier
	// allocation alive is cut: what an image retains stays bounded.
	// Step i changes every page above page i: page i stays in the
	// allocation of step i-1, whose other pages are gone.
	img = prev
	cut := false
	for i := 0; i < 64; i++ {
		for p := i%32 + 1; p < 32; p++ {
			mem[p*imagePage+2] = byte(i + 1)
		}
		before := len(img.runs)
		img = newMemoryImageSince(mem, 16, 0, 0, img)
		if len(img.runs) < before && img.retained == img.stored {
			cut = true
		}
		if img.retained > maxRetained(img.stored) {
			t.Fatalf("step %d: retained %d for %d stored", i, img.retained, img.stored)
		}
		if !bytes.Equal(img.Bytes(), mem) {
			t.Fatalf("step %d: the image differs from the memory", i)
		}
	}
	if !cut {
		t.Error("no image of the chain was copied whole: the bound never acted")
	}
}
