package sandbox

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"

	"github.com/wasmbox/wasmbox/runtime"
)

// testMemory is a 1 MiB memory with a few pages that are not zeros,
// adjacent and apart.
func testMemory() []byte {
	mem := make([]byte, 1<<20)
	for _, page := range []int{0, 1, 2, 7, 200, 255} {
		for i := 0; i < bashPage; i += 97 {
			mem[page*bashPage+i] = byte(page + i)
		}
	}
	return mem
}

// bashRecord builds a bash record of an earlier form around pages
// (uncompressed), with its sum, as a hostile snapshot would.
func bashRecord(magic string, size, sp uint64, pages []byte) []byte {
	enc, _ := zstd.NewWriter(nil)
	defer enc.Close()
	h := bashModuleHash()
	sum := sha256.Sum256(pages)
	b := append([]byte(magic), h[:]...)
	b = appendString(b, "/home/user")
	b = binary.AppendUvarint(b, size)
	b = binary.AppendUvarint(b, sp)
	b = append(b, sum[:]...)
	return appendBytes(b, enc.EncodeAll(pages, nil))
}

// testRegion is a region of a record in its current form, as a hostile
// snapshot would write it: its base and its runs (uncompressed), or its
// blob as it is when z is set.
type testRegion struct {
	base uint64
	runs []byte
	z    []byte
}

// regionRecord builds a bash record in its current form: count regions
// announced, region bytes each.
func regionRecord(size, region, count uint64, regions ...testRegion) []byte {
	enc, _ := zstd.NewWriter(nil)
	defer enc.Close()
	h := bashModuleHash()
	b := append([]byte(bashImageMagic), h[:]...)
	b = appendString(b, "/home/user")
	b = binary.AppendUvarint(b, size)
	b = binary.AppendUvarint(b, 4096)
	b = binary.AppendUvarint(b, region)
	b = binary.AppendUvarint(b, count)
	for _, g := range regions {
		b = binary.AppendUvarint(b, g.base)
		z := g.z
		if z == nil {
			z = enc.EncodeAll(g.runs, nil)
		}
		b = appendBytes(b, z)
	}
	return b
}

// pageRun is a run of pages as a record holds it: offset, length, bytes.
func pageRun(off, n uint64, data []byte) []byte {
	b := binary.AppendUvarint(nil, off)
	b = binary.AppendUvarint(b, n)
	return append(b, data...)
}

// memoryRuns is mem's pages that are not zeros in runs, as the second
// form holds them.
func memoryRuns(mem []byte) []byte {
	var b []byte
	for off := 0; off < len(mem); {
		if bytes.Equal(mem[off:off+bashPage], make([]byte, bashPage)) {
			off += bashPage
			continue
		}
		end := off + bashPage
		for end < len(mem) && !bytes.Equal(mem[end:end+bashPage], make([]byte, bashPage)) {
			end += bashPage
		}
		b = append(b, pageRun(uint64(off), uint64(end-off), mem[off:end])...)
		off = end
	}
	return b
}

// TestBashImageRecord: the record holds the pages that are not zeros, by
// region, and decodes to the same memory; the earlier forms (the whole
// memory; all the runs in one blob) still decode; the same memory gives
// the same bytes, whatever record it is encoded since.
func TestBashImageRecord(t *testing.T) {
	if bashModuleHash() == ([32]byte{}) {
		t.Skip("bash.wasm is not built in")
	}
	mem := testMemory()
	img := runtime.NewMemoryImage(mem, 4096)
	rec, err := encodeBashImage(img, "/home/user")
	if err != nil {
		t.Fatal(err)
	}
	if again, _ := encodeBashImage(runtime.NewMemoryImage(bytes.Clone(mem), 4096), "/home/user"); !bytes.Equal(again, rec) {
		t.Error("the same memory gave another record")
	}
	got, dir, err := decodeBashImage(rec, 1<<20)
	if err != nil || dir != "/home/user" || got.StackPointer() != 4096 || !bytes.Equal(got.Bytes(), mem) {
		t.Fatalf("decode: %v, dir %q", err, dir)
	}
	// Pages 0-2 and 7 are region 0, 200 region 25, 255 region 31.
	parts, err := encodeBashRecord(img, "/home/user", nil)
	if err != nil {
		t.Fatal(err)
	}
	var bases []uint64
	for _, g := range parts.regions {
		bases = append(bases, g.base)
	}
	if want := []uint64{0, 25 * bashRegionSize, 31 * bashRegionSize}; fmt.Sprint(bases) != fmt.Sprint(want) {
		t.Fatalf("regions at %v, want %v", bases, want)
	}
	// Encoded since that record, after a change to page 200: regions 0
	// and 31 keep their encoding (the same bytes, not made again),
	// region 25 gets a new one, and the record is what a whole encoding
	// gives. Since a record of other memory, the same bytes again.
	mem2 := bytes.Clone(mem)
	mem2[200*bashPage+5] ^= 0xff
	img2 := runtime.NewMemoryImage(mem2, 4096)
	parts2, err := encodeBashRecord(img2, "/home/user", parts)
	if err != nil {
		t.Fatal(err)
	}
	for i, same := range []bool{true, false, true} {
		if got := &parts2.regions[i].enc[0] == &parts.regions[i].enc[0]; got != same {
			t.Errorf("region %d: encoding kept %v, want %v", i, got, same)
		}
	}
	whole2, _ := encodeBashImage(img2, "/home/user")
	if !bytes.Equal(parts2.bytes(), whole2) {
		t.Error("the record encoded since another differs from the whole encoding")
	}
	other, _ := encodeBashRecord(runtime.NewMemoryImage(make([]byte, 2<<20), 8192), "/", nil)
	if again, _ := encodeBashRecord(img2, "/home/user", other); !bytes.Equal(again.bytes(), whole2) {
		t.Error("the record encoded since one of other memory differs from the whole encoding")
	}
	// The earlier forms.
	got, _, err = decodeBashImage(bashRecord(bashImageMagicV1, 1<<20, 4096, mem), 1<<20)
	if err != nil || !bytes.Equal(got.Bytes(), mem) {
		t.Fatalf("decode of the first form: %v", err)
	}
	got, _, err = decodeBashImage(bashRecord(bashImageMagicV2, 1<<20, 4096, memoryRuns(mem)), 1<<20)
	if err != nil || !bytes.Equal(got.Bytes(), mem) {
		t.Fatalf("decode of the second form: %v", err)
	}
}

// TestBashImageRecordHostile: a record whose regions or runs are out of
// order, overlapping, not whole pages, outside their region or the
// memory, empty, truncated or that decompress to more than a region holds
// is refused with ErrCorruptSnapshot, and so is a record of the second
// form whose runs are (with a sum that matches: the checks are not the
// sum's).
func TestBashImageRecordHostile(t *testing.T) {
	if bashModuleHash() == ([32]byte{}) {
		t.Skip("bash.wasm is not built in")
	}
	const size, region = 1 << 20, bashRegionSize
	page := bytes.Repeat([]byte{1}, bashPage)
	pages := func(n int) []byte { return bytes.Repeat(page, n) }
	valid := regionRecord(size, region, 2, testRegion{0, pageRun(0, 4096, page), nil}, testRegion{region, pageRun(region+8192, 4096, page), nil})
	if _, _, err := decodeBashImage(valid, size); err != nil {
		t.Fatalf("a valid record: %v", err)
	}
	bomb, _ := zstd.NewWriter(nil)
	defer bomb.Close()
	for _, c := range []struct {
		name string
		rec  []byte
		want string
	}{
		{"regions out of order", regionRecord(size, region, 2, testRegion{region, pageRun(region, 4096, page), nil}, testRegion{0, pageRun(0, 4096, page), nil}), "out of order"},
		{"region twice", regionRecord(size, region, 2, testRegion{0, pageRun(0, 4096, page), nil}, testRegion{0, pageRun(8192, 4096, page), nil}), "out of order"},
		{"region not on a region", regionRecord(size, region, 1, testRegion{4096, pageRun(4096, 4096, page), nil}), "not on a region"},
		{"region outside the memory", regionRecord(size, region, 1, testRegion{size, pageRun(size, 4096, page), nil}), "outside the 1048576-byte memory"},
		{"region far outside", regionRecord(size, region, 1, testRegion{1 << 62, pageRun(0, 4096, page), nil}), "outside"},
		{"run past its region", regionRecord(size, region, 1, testRegion{0, pageRun(region, 4096, page), nil}), "outside its region"},
		{"run across the region's end", regionRecord(size, region, 1, testRegion{0, pageRun(region-4096, 8192, pages(2)), nil}), "outside its region"},
		{"run before its region", regionRecord(size, region, 1, testRegion{region, pageRun(0, 4096, page), nil}), "out of order"},
		{"run past the memory", regionRecord(size, region, 1, testRegion{size - region, pageRun(size, 4096, page), nil}), "outside its region"},
		{"overlapping runs", regionRecord(size, region, 1, testRegion{0, append(pageRun(0, 8192, pages(2)), pageRun(4096, 4096, page)...), nil}), "out of order"},
		{"run not on a page", regionRecord(size, region, 1, testRegion{0, pageRun(100, 4096, page), nil}), "not on a page"},
		{"run not whole pages", regionRecord(size, region, 1, testRegion{0, pageRun(0, 100, page[:100]), nil}), "not whole pages"},
		{"empty run", regionRecord(size, region, 1, testRegion{0, pageRun(0, 0, nil), nil}), "not whole pages"},
		{"huge run", regionRecord(size, region, 1, testRegion{0, pageRun(0, 1<<62, page), nil}), "outside"},
		{"truncated run", regionRecord(size, region, 1, testRegion{0, pageRun(0, 8192, page), nil}), "truncated"},
		{"bad run varint", regionRecord(size, region, 1, testRegion{0, []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}, nil}), "offset"},
		{"empty region", regionRecord(size, region, 1, testRegion{0, nil, nil}), "holds no page"},
		{"more than a region holds", regionRecord(size, region, 1, testRegion{0, pageRun(0, region, pages(region/bashPage+1)), nil}), "does not decompress"},
		{"not zstd", regionRecord(size, region, 1, testRegion{0, nil, []byte("not zstd at all")}), "does not decompress"},
		{"zstd checksum", regionRecord(size, region, 1, testRegion{0, nil, flipLast(bomb.EncodeAll(pageRun(0, 4096, page), nil))}), "does not decompress"},
		{"fewer regions than announced", regionRecord(size, region, 3, testRegion{0, pageRun(0, 4096, page), nil}), "bash region offset"},
		{"more regions than the memory has", regionRecord(size, region, size/region+1, testRegion{0, pageRun(0, 4096, page), nil}), "regions of"},
		{"region not whole pages", regionRecord(size, 100, 1, testRegion{0, pageRun(0, 4096, page), nil}), "not whole pages"},
		{"region of no bytes", regionRecord(size, 0, 0), "not whole pages"},
		{"region too large", regionRecord(size, 2<<20, 1, testRegion{0, pageRun(0, 4096, page), nil}), "not whole pages up to"},
		{"truncated record", valid[:len(valid)-5], "bash memory"},
		{"data after the regions", append(bytes.Clone(valid), 0), "data after the memory"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, _, err := decodeBashImage(c.rec, size)
			if !errors.Is(err, ErrCorruptSnapshot) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("decode: %v, want ErrCorruptSnapshot with %q", err, c.want)
			}
		})
	}
	// The second form.
	for _, c := range []struct {
		name  string
		pages []byte
		want  string
	}{
		{"out of order", append(pageRun(8192, 4096, page), pageRun(0, 4096, page)...), "out of order"},
		{"overlapping", append(pageRun(0, 8192, pages(2)), pageRun(4096, 4096, page)...), "out of order"},
		{"not on a page", pageRun(100, 4096, page), "not on a page"},
		{"not whole pages", pageRun(0, 100, page[:100]), "not whole pages"},
		{"empty run", pageRun(0, 0, nil), "not whole pages"},
		{"outside the memory", pageRun(1<<20, 4096, page), "outside"},
		{"huge length", pageRun(0, 1<<62, page), "outside"},
		{"truncated", pageRun(0, 8192, page), "truncated"},
		{"bad varint", []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}, "offset"},
	} {
		t.Run("second form/"+c.name, func(t *testing.T) {
			_, _, err := decodeBashImage(bashRecord(bashImageMagicV2, size, 4096, c.pages), size)
			if !errors.Is(err, ErrCorruptSnapshot) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("decode: %v, want ErrCorruptSnapshot with %q", err, c.want)
			}
		})
	}
}

func flipLast(b []byte) []byte {
	b = bytes.Clone(b)
	b[len(b)-1] ^= 0xff
	return b
}

// BenchmarkBashImageRecord: encoding the record of an idle bash session's
// image, as every snapshot (and cluster commit) does.
func BenchmarkBashImageRecord(b *testing.B) {
	sb, err := New(context.Background(), WithShell(ShellBash))
	if err != nil {
		b.Fatal(err)
	}
	defer sb.Close()
	if _, err := sb.Run(context.Background(), "x=1"); err != nil {
		b.Fatal(err)
	}
	var buf bytes.Buffer
	for b.Loop() {
		buf.Reset()
		if err := sb.Snapshot(&buf); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(buf.Len()), "bytes")
}

// BenchmarkSnapshotPartsBash: the incremental snapshot of a bash session
// after a run that set a variable, as a cluster commit takes it (the run
// itself is not timed): the regions of bash's memory the run did not
// dirty keep their parts.
func BenchmarkSnapshotPartsBash(b *testing.B) {
	ctx := context.Background()
	sb, err := New(ctx, WithShell(ShellBash))
	if err != nil {
		b.Fatal(err)
	}
	defer sb.Close()
	if _, err := sb.SnapshotParts(); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		b.StopTimer()
		if _, err := sb.Run(ctx, "x=$((x+1))"); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		if _, err := sb.SnapshotParts(); err != nil {
			b.Fatal(err)
		}
	}
}

// FuzzBashImageRecord: whatever follows the magic and the module's sum, a
// record decodes to an image or fails with ErrCorruptSnapshot, never a
// panic; one that decodes encodes to a record that decodes to the same
// memory.
func FuzzBashImageRecord(f *testing.F) {
	if bashModuleHash() == ([32]byte{}) {
		f.Skip("bash.wasm is not built in")
	}
	h := bashModuleHash()
	prefix := append([]byte(bashImageMagic), h[:]...)
	rec, err := encodeBashImage(runtime.NewMemoryImage(testMemory(), 4096), "/home/user")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(rec[len(prefix):])
	page := bytes.Repeat([]byte{7}, bashPage)
	f.Add(regionRecord(1<<20, bashRegionSize, 2, testRegion{0, pageRun(0, 4096, page), nil}, testRegion{bashRegionSize, pageRun(bashRegionSize+4096, 8192, append(page, page...)), nil})[len(prefix):])
	f.Fuzz(func(t *testing.T, rest []byte) {
		img, dir, err := decodeBashImage(append(bytes.Clone(prefix), rest...), 1<<20)
		if err != nil {
			if !errors.Is(err, ErrCorruptSnapshot) {
				t.Fatalf("error that is not ErrCorruptSnapshot: %v", err)
			}
			return
		}
		again, err := encodeBashImage(img, dir)
		if err != nil {
			t.Fatal(err)
		}
		img2, _, err := decodeBashImage(again, 1<<20)
		if err != nil || !bytes.Equal(img2.Bytes(), img.Bytes()) {
			t.Fatalf("re-encoded record: %v", err)
		}
	})
}
