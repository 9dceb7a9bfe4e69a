package fileutils

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// archiveTree writes a small tree with text, binary and empty files.
func archiveTree(t *testing.T, dir string) map[string]string {
	t.Helper()
	r := rand.New(rand.NewSource(7))
	bin := make([]byte, 70000)
	r.Read(bin)
	files := map[string]string{
		"src/a.txt":         strings.Repeat("hello world\n", 500),
		"src/empty":         "",
		"src/sub/bin.dat":   string(bin),
		"src/sub/deep/x.go": "package x\n",
	}
	when := time.Date(2023, 5, 6, 7, 8, 9, 0, time.UTC)
	for name, data := range files {
		mustWrite(t, filepath.Join(dir, name), data, 0o644, when)
	}
	return files
}

func checkTree(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for name, data := range files {
		got, err := os.ReadFile(filepath.Join(root, name))
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if !bytes.Equal(got, []byte(data)) {
			t.Errorf("%s: content differs (%d bytes, want %d)", name, len(got), len(data))
		}
	}
}

func TestTarRoundTrip(t *testing.T) {
	for _, z := range []string{"", "z"} {
		dir := t.TempDir()
		files := archiveTree(t, dir)
		if _, errs, st := run(t, dir, "", "tar", "-c"+z+"f", "a.tar", "src"); st != 0 {
			t.Fatalf("create: %s", errs)
		}
		out, _, _ := run(t, dir, "", "tar", "-tf", "a.tar")
		want := "src/\nsrc/a.txt\nsrc/empty\nsrc/sub/\nsrc/sub/bin.dat\nsrc/sub/deep/\nsrc/sub/deep/x.go\n"
		if out != want {
			t.Errorf("list:\n%s\nwant:\n%s", out, want)
		}
		os.MkdirAll(dir+"/out", 0o755)
		if _, errs, st := run(t, dir, "", "tar", "-xf", "a.tar", "-C", "out"); st != 0 {
			t.Fatalf("extract: %s", errs)
		}
		checkTree(t, dir+"/out", files)
		fi, err := os.Stat(dir + "/out/src/a.txt")
		if err != nil || !fi.ModTime().Equal(time.Date(2023, 5, 6, 7, 8, 9, 0, time.UTC)) {
			t.Errorf("mtime not restored: %v %v", fi, err)
		}
		// Append (-r) keeps the old members.
		if z == "" {
			mustWrite(t, dir+"/more.txt", "more\n", 0o644, time.Time{})
			run(t, dir, "", "tar", "-rf", "a.tar", "more.txt")
			out, _, _ = run(t, dir, "", "tar", "-tf", "a.tar")
			if out != want+"more.txt\n" {
				t.Errorf("after append:\n%s", out)
			}
		}
	}
}

func TestTarStdoutPipe(t *testing.T) {
	dir := t.TempDir()
	files := archiveTree(t, dir)
	arch, errs, st := run(t, dir, "", "tar", "-czf", "-", "-C", "src", ".")
	if st != 0 {
		t.Fatalf("create: %s", errs)
	}
	// tar -z compresses at gzip's default level, as GNU tar does (see
	// tarGzipLevel): the gzip header's XFL byte is 0, not 4 (fastest).
	if len(arch) < 10 || arch[8] != 0 {
		t.Errorf("tar czf: gzip header %x, want XFL 0 (default level)", arch[:min(10, len(arch))])
	}
	os.MkdirAll(dir+"/copy", 0o755)
	if _, errs, st := run(t, dir+"/copy", arch, "tar", "-xzf", "-"); st != 0 {
		t.Fatalf("extract: %s", errs)
	}
	sub := map[string]string{}
	for k, v := range files {
		sub[strings.TrimPrefix(k, "src/")] = v
	}
	checkTree(t, dir+"/copy", sub)
}

func TestGzipRoundTrip(t *testing.T) {
	dir := t.TempDir()
	data := strings.Repeat("compressible line\n", 2000)
	mustWrite(t, dir+"/f.txt", data, 0o644, time.Time{})
	if _, errs, st := run(t, dir, "", "gzip", "-9", "f.txt"); st != 0 {
		t.Fatal(errs)
	}
	if _, err := os.Stat(dir + "/f.txt"); !os.IsNotExist(err) {
		t.Errorf("gzip kept the original: %v", err)
	}
	gz, _ := os.ReadFile(dir + "/f.txt.gz")
	if len(gz) == 0 || len(gz) > len(data)/10 {
		t.Errorf("compressed size %d for %d bytes", len(gz), len(data))
	}
	out, _, st := run(t, dir, "", "zcat", "f.txt.gz")
	if st != 0 || out != data {
		t.Errorf("zcat: %d bytes, status %d", len(out), st)
	}
	listing, _, _ := run(t, dir, "", "gzip", "-l", "f.txt.gz")
	if !strings.Contains(listing, " 36000 ") || !strings.HasSuffix(listing, " f.txt\n") {
		t.Errorf("gzip -l: %q", listing)
	}
	if _, errs, st := run(t, dir, "", "gunzip", "f.txt.gz"); st != 0 {
		t.Fatal(errs)
	}
	got, _ := os.ReadFile(dir + "/f.txt")
	if string(got) != data {
		t.Error("gunzip changed the data")
	}
	// stdin to stdout, and concatenated members.
	c1, _, _ := run(t, dir, "a\n", "gzip", "-c")
	c2, _, _ := run(t, dir, "b\n", "gzip")
	out, errs, st := run(t, dir, c1+c2, "gunzip", "-c")
	if out != "a\nb\n" || st != 0 {
		t.Errorf("concatenated members: %q %q %d", out, errs, st)
	}
	// Corrupt input is reported, not a panic.
	_, errs, st = run(t, dir, c1[:len(c1)-6], "gunzip", "-c")
	if st != 1 || !strings.Contains(errs, "unexpected end of file") {
		t.Errorf("truncated input: %q %d", errs, st)
	}
}

func TestZipRoundTrip(t *testing.T) {
	dir := t.TempDir()
	files := archiveTree(t, dir)
	out, errs, st := run(t, dir, "", "zip", "-r", "a.zip", "src")
	if st != 0 {
		t.Fatalf("zip: %s", errs)
	}
	for _, want := range []string{"  adding: src/ (stored 0%)\n", "  adding: src/a.txt (deflated 9", "  adding: src/sub/bin.dat (stored 0%)\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("zip output lacks %q:\n%s", want, out)
		}
	}
	// Updating one entry keeps the others.
	mustWrite(t, dir+"/src/empty", "now full\n", 0o644, time.Time{})
	out, _, _ = run(t, dir, "", "zip", "a.zip", "src/empty")
	if out != "updating: src/empty (stored 0%)\n" {
		t.Errorf("update: %q", out)
	}
	files["src/empty"] = "now full\n"
	if _, errs, st := run(t, dir, "", "unzip", "-q", "a.zip", "-d", "out"); st != 0 {
		t.Fatalf("unzip: %s", errs)
	}
	checkTree(t, dir+"/out", files)
	out, _, _ = run(t, dir, "", "zip", "-d", "a.zip", "src/sub/*")
	if !strings.Contains(out, "deleting: src/sub/bin.dat") {
		t.Errorf("zip -d: %q", out)
	}
	list, _, _ := run(t, dir, "", "unzip", "-l", "a.zip")
	if strings.Contains(list, "bin.dat") || !strings.Contains(list, "src/a.txt") {
		t.Errorf("after delete:\n%s", list)
	}
}

// TestHostileArchives feeds garbage and truncated archives to every reader:
// each must fail with a message, never panic or hang.
func TestHostileArchives(t *testing.T) {
	dir := t.TempDir()
	archiveTree(t, dir)
	run(t, dir, "", "tar", "-czf", "a.tgz", "src")
	run(t, dir, "", "zip", "-qr", "a.zip", "src")
	tgz, _ := os.ReadFile(dir + "/a.tgz")
	zp, _ := os.ReadFile(dir + "/a.zip")
	r := rand.New(rand.NewSource(3))
	for i := 0; i < 40; i++ {
		for _, src := range []struct {
			name string
			data []byte
			cmd  []string
		}{
			{"x.tgz", tgz, []string{"tar", "-tzf", "x.tgz"}},
			{"x.tgz", tgz, []string{"gunzip", "-c", "x.tgz"}},
			{"x.zip", zp, []string{"unzip", "-l", "x.zip"}},
			{"x.zip", zp, []string{"unzip", "-o", "-q", "x.zip", "-d", "o"}},
		} {
			b := append([]byte{}, src.data...)
			switch i % 3 {
			case 0:
				b = b[:r.Intn(len(b))]
			case 1:
				for k := 0; k < 5; k++ {
					b[r.Intn(len(b))] ^= byte(1 + r.Intn(255))
				}
			default:
				r.Read(b[r.Intn(len(b)):])
			}
			os.WriteFile(filepath.Join(dir, src.name), b, 0o644)
			run(t, dir, "", src.cmd...) // must not panic
		}
	}
}

// TestTarGzipSize checks tar -z's compression: the archive is a gzip
// stream (read here with the standard library) of exactly what tar -c
// writes, and no more than 10% larger than the standard library's
// gzip -6 of it (GNU tar's gzip -6 gives about the same size).
func TestTarGzipSize(t *testing.T) {
	dir := t.TempDir()
	r := rand.New(rand.NewSource(9))
	words := strings.Fields("alpha beta gamma delta needle omega kappa sigma zeta theta")
	var text strings.Builder
	for text.Len() < 300_000 {
		fmt.Fprintf(&text, "%06d", r.Intn(5000))
		for range 8 {
			text.WriteString(" " + words[r.Intn(len(words))])
		}
		text.WriteByte('\n')
	}
	when := time.Date(2023, 5, 6, 7, 8, 9, 0, time.UTC)
	for i := range 60 {
		off := i * 4000
		mustWrite(t, filepath.Join(dir, "src", fmt.Sprintf("f%02d.txt", i)), text.String()[off:off+5000], 0o644, when)
	}
	for _, args := range [][]string{{"-cf", "a.tar", "src"}, {"-czf", "a.tgz", "src"}} {
		if _, errs, st := run(t, dir, "", append([]string{"tar"}, args...)...); st != 0 {
			t.Fatalf("tar %v: %s", args, errs)
		}
	}
	plain, _ := os.ReadFile(filepath.Join(dir, "a.tar"))
	tgz, _ := os.ReadFile(filepath.Join(dir, "a.tgz"))
	zr, err := gzip.NewReader(bytes.NewReader(tgz))
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, plain) {
		t.Fatalf("tar -z holds %d bytes, tar -c wrote %d (or they differ)", len(got), len(plain))
	}
	var ref bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&ref, 6)
	zw.Write(plain)
	zw.Close()
	t.Logf("tar -z: %d bytes; compress/gzip -6: %d bytes (of %d)", len(tgz), ref.Len(), len(plain))
	if float64(len(tgz)) > 1.10*float64(ref.Len()) {
		t.Errorf("tar -z wrote %d bytes, more than 10%% over gzip -6's %d", len(tgz), ref.Len())
	}
}
