package sandbox

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
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

// bashRecord builds a bash record around pages (uncompressed), with its
// sum, as a hostile snapshot would.
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

// TestBashImageRecord: the record holds the pages that are not zeros and
// decodes to the same memory; the first form (the whole memory) still
// decodes; the same memory gives the same bytes; a record whose runs are
// out of order, overlapping, not whole pages, outside the memory or
// truncated is refused, with a sum that matches (the checks are not the
// sum's).
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
	// The first form: the whole memory.
	got, _, err = decodeBashImage(bashRecord(bashImageMagicV1, 1<<20, 4096, mem), 1<<20)
	if err != nil || !bytes.Equal(got.Bytes(), mem) {
		t.Fatalf("decode of the first form: %v", err)
	}
	page := bytes.Repeat([]byte{1}, bashPage)
	run := func(off, n uint64, data []byte) []byte {
		b := binary.AppendUvarint(nil, off)
		b = binary.AppendUvarint(b, n)
		return append(b, data...)
	}
	for _, c := range []struct {
		name  string
		pages []byte
		want  string
	}{
		{"out of order", append(run(8192, 4096, page), run(0, 4096, page)...), "out of order"},
		{"overlapping", append(run(0, 8192, append(page, page...)), run(4096, 4096, page)...), "out of order"},
		{"not on a page", run(100, 4096, page), "not on a page"},
		{"not whole pages", run(0, 100, page[:100]), "not whole pages"},
		{"empty run", run(0, 0, nil), "not whole pages"},
		{"outside the memory", run(1<<20, 4096, page), "outside"},
		{"huge length", run(0, 1<<62, page), "outside"},
		{"truncated", run(0, 8192, page), "truncated"},
		{"bad varint", []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}, "offset"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, _, err := decodeBashImage(bashRecord(bashImageMagic, 1<<20, 4096, c.pages), 1<<20)
			if !errors.Is(err, ErrCorruptSnapshot) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("decode: %v, want ErrCorruptSnapshot with %q", err, c.want)
			}
		})
	}
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
