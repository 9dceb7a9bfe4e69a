package sandbox

import (
	"bytes"
	"errors"
	"testing"
	"time"
)

func sampleImage() *snapImage {
	t0 := time.Date(2001, 2, 3, 4, 5, 6, 7, time.UTC)
	return &snapImage{
		Entries: []snapEntry{
			{Kind: kindFile, Path: "/home/user/a.txt", Mode: 0o644, Mtime: t0, Data: []byte("hello\n")},
			{Kind: kindDir, Path: "/home", Mode: 0o755 | 1<<31, Mtime: t0},
			{Kind: kindDir, Path: "/home/user", Mode: 0o700 | 1<<31, Mtime: t0},
			{Kind: kindSymlink, Path: "/home/user/l", Target: "a.txt", Mtime: t0},
			{Kind: kindFile, Path: "/home/user/empty", Mode: 0o600, Mtime: t0, Data: nil},
		},
		State: []byte(`{"cwd":"/home/user"}`),
	}
}

func TestSnapshotCodecRoundTrip(t *testing.T) {
	var a bytes.Buffer
	if err := encodeSnapshot(&a, sampleImage()); err != nil {
		t.Fatal(err)
	}
	img, err := decodeSnapshot(bytes.NewReader(a.Bytes()), 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	if len(img.Entries) != 5 || img.Entries[0].Path != "/home" || string(img.State) != `{"cwd":"/home/user"}` {
		t.Fatalf("decoded %+v", img)
	}
	var b bytes.Buffer
	if err := encodeSnapshot(&b, img); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a.Bytes(), b.Bytes()) {
		t.Fatal("round trip is not byte-identical")
	}
}

func TestSnapshotCodecCorrupt(t *testing.T) {
	var good bytes.Buffer
	if err := encodeSnapshot(&good, sampleImage()); err != nil {
		t.Fatal(err)
	}
	flip := append([]byte(nil), good.Bytes()...)
	flip[30] ^= 0xff
	badVersion := append([]byte(nil), good.Bytes()...)
	badVersion[len(snapshotMagic)+3] = 9
	cases := map[string][]byte{
		"empty":     nil,
		"garbage":   []byte("not a snapshot at all, just text that is long enough to pass the size check"),
		"truncated": good.Bytes()[:good.Len()-5],
		"bitflip":   flip,
		"version":   badVersion,
	}
	for name, in := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := decodeSnapshot(bytes.NewReader(in), 1<<20)
			if !errors.Is(err, ErrCorruptSnapshot) {
				t.Fatalf("got %v, want ErrCorruptSnapshot", err)
			}
		})
	}
	if _, err := decodeSnapshot(bytes.NewReader(good.Bytes()), 10); !errors.Is(err, ErrCorruptSnapshot) {
		t.Fatalf("size limit: got %v", err)
	}
}

// FuzzSnapshotDecode feeds arbitrary bytes (and valid snapshots with the
// checksum recomputed after mutation) to the decoder: it must return an
// image or an error, never panic.
func FuzzSnapshotDecode(f *testing.F) {
	var good bytes.Buffer
	if err := encodeSnapshot(&good, sampleImage()); err != nil {
		f.Fatal(err)
	}
	f.Add(good.Bytes(), false)
	f.Add([]byte(snapshotMagic), true)
	f.Fuzz(func(t *testing.T, data []byte, fixSum bool) {
		if fixSum && len(data) > 32 {
			body := data[:len(data)-32]
			sum := sha256Sum(body)
			data = append(append([]byte(nil), body...), sum...)
		}
		img, err := decodeSnapshot(bytes.NewReader(data), 1<<20)
		if err == nil {
			var out bytes.Buffer
			if err := encodeSnapshot(&out, img); err != nil {
				t.Fatalf("re-encode of a decoded image failed: %v", err)
			}
		}
	})
}
