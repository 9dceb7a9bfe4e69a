// Command modzip builds this module's zip the way the Go module proxy
// does (`git archive` of a revision, then golang.org/x/mod/zip's checks:
// file names valid and free of case-insensitive collisions, 500 MB
// uncompressed in all, go.mod and LICENSE 16 MB at most) and fails on any
// violation. CI runs it twice:
//
//	go run ./.ci/modzip check [-rev HEAD]
//	go run ./.ci/modzip release -proxy DIR -version vX.Y.Z [-rev HEAD]
//
// check reports the files, their total size and every invalid name; the
// exit status is 1 if the go command would refuse the zip. release also
// writes a file GOPROXY holding the revision as a release of the module
// (DIR/MODULE/@v/{list,VERSION.info,VERSION.mod,VERSION.zip}), for
// .ci/module-proof.
//
// It lives under .ci (a directory the go command leaves out of ./... and
// of the module's packages) and is run from the module root.
package main

import (
	"archive/zip"
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/module"
	modzip "golang.org/x/mod/zip"
)

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	fl := flag.NewFlagSet(os.Args[1], flag.ExitOnError)
	rev := fl.String("rev", "HEAD", "git revision to archive")
	proxy := fl.String("proxy", "", "release: the file GOPROXY directory to write")
	version := fl.String("version", "", "release: the version to publish (vX.Y.Z)")
	_ = fl.Parse(os.Args[2:])
	var err error
	switch os.Args[1] {
	case "check":
		err = check(*rev)
	case "release":
		err = release(*rev, *proxy, *version)
	default:
		usage()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "modzip:", err)
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: modzip check [-rev REV] | modzip release -proxy DIR -version vX.Y.Z [-rev REV]")
	os.Exit(2)
}

// archive is a revision's files as `git archive` gives them to the go
// command, and the module path of its go.mod.
type archive struct {
	files   []modzip.File
	modPath string
	goMod   []byte
	size    int64 // uncompressed, all files
}

func readArchive(rev string) (*archive, error) {
	// The go command's flags (modfetch/codehost): no line-ending
	// conversion on the way out.
	cmd := exec.Command("git", "-c", "core.autocrlf=input", "-c", "core.eol=lf", "archive", "--format=zip", rev)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("git archive %s: %v: %s", rev, err, strings.TrimSpace(stderr.String()))
	}
	zr, err := zip.NewReader(bytes.NewReader(stdout.Bytes()), int64(stdout.Len()))
	if err != nil {
		return nil, fmt.Errorf("git archive %s: %w", rev, err)
	}
	a := &archive{}
	for _, zf := range zr.File {
		if strings.HasSuffix(zf.Name, "/") {
			continue
		}
		a.files = append(a.files, zipEntry{zf})
		a.size += int64(zf.UncompressedSize64)
		if zf.Name == "go.mod" {
			r, err := zf.Open()
			if err != nil {
				return nil, err
			}
			a.goMod, err = io.ReadAll(io.LimitReader(r, modzip.MaxGoMod+1))
			r.Close()
			if err != nil {
				return nil, err
			}
		}
	}
	if a.goMod == nil {
		return nil, fmt.Errorf("%s has no go.mod at its root", rev)
	}
	a.modPath = modfile.ModulePath(a.goMod)
	if err := module.CheckPath(a.modPath); err != nil {
		return nil, fmt.Errorf("go.mod: %w", err)
	}
	return a, nil
}

// zipEntry is a file of git's archive as a modzip.File.
type zipEntry struct{ f *zip.File }

func (e zipEntry) Path() string                 { return e.f.Name }
func (e zipEntry) Lstat() (os.FileInfo, error)  { return e.f.FileInfo(), nil }
func (e zipEntry) Open() (io.ReadCloser, error) { return e.f.Open() }

// verify runs x/mod/zip's checks over the archive and reports them; the
// error lists every violation.
func (a *archive) verify(out io.Writer) error {
	cf, err := modzip.CheckFiles(a.files)
	if err != nil && len(cf.Invalid) == 0 && cf.SizeError == nil {
		return err
	}
	fmt.Fprintf(out, "module %s: %d files, %.1f MB uncompressed (limit %d MB)\n",
		a.modPath, len(a.files), float64(a.size)/1e6, modzip.MaxZipFile>>20)
	big := append([]modzip.File(nil), a.files...)
	sort.Slice(big, func(i, j int) bool { return size(big[i]) > size(big[j]) })
	for _, f := range big[:min(5, len(big))] {
		fmt.Fprintf(out, "  %8.1f MB  %s\n", float64(size(f))/1e6, f.Path())
	}
	for _, o := range cf.Omitted {
		fmt.Fprintf(out, "  omitted (as the go command would): %s: %v\n", o.Path, o.Err)
	}
	var errs []string
	for _, fe := range cf.Invalid {
		errs = append(errs, fmt.Sprintf("%s: %v", fe.Path, fe.Err))
	}
	if cf.SizeError != nil {
		errs = append(errs, cf.SizeError.Error())
	}
	if len(errs) > 0 {
		return fmt.Errorf("the go command would refuse this module zip:\n  %s", strings.Join(errs, "\n  "))
	}
	return nil
}

func size(f modzip.File) int64 {
	fi, err := f.Lstat()
	if err != nil {
		return 0
	}
	return fi.Size()
}

// countWriter counts the bytes of the zip without keeping them.
type countWriter struct{ n int64 }

func (c *countWriter) Write(p []byte) (int, error) { c.n += int64(len(p)); return len(p), nil }

func check(rev string) error {
	a, err := readArchive(rev)
	if err != nil {
		return err
	}
	if err := a.verify(os.Stdout); err != nil {
		return err
	}
	// Create applies the same checks and the limit on the zip itself.
	var cw countWriter
	if err := modzip.Create(&cw, module.Version{Path: a.modPath, Version: "v0.0.0"}, a.files); err != nil {
		return err
	}
	fmt.Printf("module zip: %.1f MB compressed: OK\n", float64(cw.n)/1e6)
	return nil
}

func release(rev, proxy, version string) error {
	if proxy == "" || version == "" {
		usage()
	}
	a, err := readArchive(rev)
	if err != nil {
		return err
	}
	m := module.Version{Path: a.modPath, Version: version}
	if err := module.Check(m.Path, m.Version); err != nil {
		return err
	}
	if err := a.verify(os.Stdout); err != nil {
		return err
	}
	escPath, err := module.EscapePath(m.Path)
	if err != nil {
		return err
	}
	escVer, err := module.EscapeVersion(m.Version)
	if err != nil {
		return err
	}
	dir := filepath.Join(proxy, filepath.FromSlash(escPath), "@v")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	zf, err := os.Create(filepath.Join(dir, escVer+".zip"))
	if err != nil {
		return err
	}
	if err := modzip.Create(zf, m, a.files); err != nil {
		zf.Close()
		return err
	}
	if err := zf.Close(); err != nil {
		return err
	}
	// The go command checks the zip it downloads as the proxy's clients
	// do: read it back the same way.
	if _, err := modzip.CheckZip(m, zf.Name()); err != nil {
		return fmt.Errorf("the written zip: %w", err)
	}
	info, _ := json.Marshal(struct {
		Version string
		Time    time.Time
	}{m.Version, commitTime(rev)})
	for name, data := range map[string][]byte{
		escVer + ".info": info,
		escVer + ".mod":  a.goMod,
	} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			return err
		}
	}
	list := filepath.Join(dir, "list")
	old, err := os.ReadFile(list)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	if !bytes.Contains(old, []byte(m.Version+"\n")) {
		if err := os.WriteFile(list, append(old, m.Version+"\n"...), 0o644); err != nil {
			return err
		}
	}
	fmt.Printf("released %s@%s (%s) in %s\n", m.Path, m.Version, rev, proxy)
	return nil
}

// commitTime is the committer time of rev (the .info file's Time).
func commitTime(rev string) time.Time {
	out, err := exec.Command("git", "log", "-1", "--format=%cI", rev).Output()
	if err != nil {
		return time.Now().UTC()
	}
	t, err := time.Parse(time.RFC3339, strings.TrimSpace(string(out)))
	if err != nil {
		return time.Now().UTC()
	}
	return t.UTC()
}
