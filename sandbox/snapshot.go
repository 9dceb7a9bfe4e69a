package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"sort"
	"syscall"
	"time"

	"github.com/wasmbox/wasmbox/runtime"
	"github.com/wasmbox/wasmbox/shell/bashsession"
	"github.com/wasmbox/wasmbox/shell/wire"
	"github.com/wasmbox/wasmbox/vfs"
)

// snapState is the shell part of a snapshot (the 'S' record), JSON.
type snapState struct {
	Shell wire.State `json:"shell"`
}

// Snapshot writes the whole state of the sandbox to w: every file,
// directory and symlink of the in-memory filesystem with modes and times,
// and the shell state (working directory, variables and exports,
// functions, aliases, options). The format is documented at snapshotMagic:
// versioned, checksummed, and deterministic (Snapshot, Restore, Snapshot
// gives the same bytes). Host mounts and /dev are not included.
func (s *Sandbox) Snapshot(w io.Writer) error {
	if err := s.checkOpen(); err != nil {
		return err
	}
	s.runMu.Lock()
	defer s.runMu.Unlock()
	img := &snapImage{}
	if err := s.snapshotShell(img, false, nil); err != nil {
		return err
	}
	if err := collect(s.fs, "/", s.snapshotSkip(), img, nil); err != nil {
		return fmt.Errorf("sandbox: snapshot: %w", err)
	}
	return encodeSnapshot(w, img)
}

// snapshotShell puts the shell's part of a snapshot into img: the 'S'
// record and, for GNU bash, the 'B' record: whole (img.Bash), or with
// inParts in pieces (img.bashParts) that reuse those of prev, the record
// of the last SnapshotParts, where bash's memory did not change. runMu is
// held.
func (s *Sandbox) snapshotShell(img *snapImage, inParts bool, prev *bashRecordParts) error {
	// GNU bash's state is its memory image; the 'S' record keeps the
	// working directory.
	var st wire.State
	mi, dir, err := s.sh.Image()
	if err == nil {
		st.Dir = dir
		if inParts {
			img.bashParts, err = encodeBashRecord(mi, dir, prev)
		} else {
			img.Bash, err = encodeBashImage(mi, dir)
		}
	}
	if err != nil {
		return fmt.Errorf("sandbox: snapshot: %w", err)
	}
	img.State, err = json.Marshal(snapState{Shell: st})
	if err != nil {
		return fmt.Errorf("sandbox: snapshot: %w", err)
	}
	return nil
}

// snapshotSkip is the set of paths a snapshot leaves out: /dev and the
// mount points.
func (s *Sandbox) snapshotSkip() map[string]bool {
	skip := map[string]bool{"/dev": true}
	for _, mp := range s.fs.Mounts() {
		if mp.Path != "/" {
			skip[mp.Path] = true
		}
	}
	return skip
}

// collect adds the tree at p (not p itself when it is "/") to img. read
// reads a regular file's content (nil: a copy read through fsys).
func collect(fsys vfs.FS, p string, skip map[string]bool, img *snapImage, read func(p string, fi fs.FileInfo) ([]byte, error)) error {
	if read == nil {
		read = func(p string, _ fs.FileInfo) ([]byte, error) { return readAll(fsys, p) }
	}
	f, err := fsys.Open(p)
	if err != nil {
		return err
	}
	names, err := f.Readdirnames(-1)
	f.Close()
	if err != nil {
		return err
	}
	sort.Strings(names)
	for _, n := range names {
		child := path.Join(p, n)
		if skip[child] {
			continue
		}
		fi, _, err := fsys.LstatIfPossible(child)
		if err != nil {
			return err
		}
		mt := fi.ModTime().UTC()
		switch m := fi.Mode(); {
		case m.IsDir():
			img.Entries = append(img.Entries, snapEntry{Kind: kindDir, Path: child, Mode: m, Mtime: mt})
			if err := collect(fsys, child, skip, img, read); err != nil {
				return err
			}
		case m&fs.ModeSymlink != 0:
			t, err := fsys.ReadlinkIfPossible(child)
			if err != nil {
				return err
			}
			// vfs.FS cannot set a symlink's times, so a snapshot does
			// not keep them (always the Unix epoch): round trips stay
			// byte-identical.
			img.Entries = append(img.Entries, snapEntry{Kind: kindSymlink, Path: child, Target: t, Mtime: time.Unix(0, 0).UTC()})
		case m.IsRegular():
			data, err := read(child, fi)
			if err != nil {
				return err
			}
			img.Entries = append(img.Entries, snapEntry{Kind: kindFile, Path: child, Mode: m, Mtime: mt, Data: data})
		}
		// Devices, pipes and sockets are not part of a snapshot.
	}
	return nil
}

func readAll(fsys vfs.FS, p string) ([]byte, error) {
	f, err := fsys.OpenFile(p, os.O_RDONLY|noFollow, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(f)
}

// Restore replaces the state of the sandbox with a snapshot read from r:
// the in-memory filesystem and the shell state. Host mounts stay as they
// are. A corrupt or truncated snapshot is an error wrapping
// ErrCorruptSnapshot, and the sandbox is left unchanged.
func (s *Sandbox) Restore(r io.Reader) error {
	if err := s.checkOpen(); err != nil {
		return err
	}
	img, err := decodeSnapshot(r, s.cfg.limits.VFSBytes+64<<20)
	if err != nil {
		return fmt.Errorf("sandbox: restore: %w", err)
	}
	var st snapState
	if err := json.Unmarshal(img.State, &st); err != nil {
		return fmt.Errorf("sandbox: restore: %w: shell state: %v", ErrCorruptSnapshot, err)
	}
	var bashImg *runtime.MemoryImage
	if img.Bash != nil {
		if bashImg, _, err = decodeBashImage(img.Bash, s.cfg.limits.ShellMemory); err != nil {
			return fmt.Errorf("sandbox: restore: %w", err)
		}
	}
	if !s.runMu.TryLock() {
		return ErrBusy
	}
	defer s.runMu.Unlock()

	fresh, err := New(contextBackground(), s.optionsForRestore()...)
	if err != nil {
		return fmt.Errorf("sandbox: restore: %w", err)
	}
	if err := apply(fresh.fs, img); err != nil {
		fresh.Close()
		return fmt.Errorf("sandbox: restore: %w", err)
	}
	dir := st.Shell.Dir
	if fi, err := fresh.fs.Stat(dir); err != nil || !fi.IsDir() {
		dir = vfs.UserHome
	}
	// Swap in the restored filesystem (fresh carries its own host mounts,
	// opened with the same options) and its shell, then load the state.
	st.Shell.Dir = dir
	if err := fresh.restoreShell(st.Shell, bashImg); err != nil {
		fresh.Close()
		return fmt.Errorf("sandbox: restore: %w: shell state: %v", ErrCorruptSnapshot, err)
	}
	s.sh.Close()
	s.fs, s.gfs, s.sh = fresh.fs, fresh.gfs, fresh.sh
	s.parts = nil // of the files replaced
	// The shell's commands belong to this sandbox, not to fresh.
	s.sh.SetSpawner(&commandRunner{s: s})
	oldHosts := s.hosts
	s.hosts = fresh.hosts
	oldHosts.release()
	// And so does fresh's share of the memory budget (its shell grows in
	// it); this sandbox's old share goes back.
	oldMem := s.mem
	s.mem = fresh.mem
	oldMem.release()
	return nil
}

// restoreShell loads a snapshot's shell state into the (fresh) sandbox's
// GNU bash: its memory image, or, from a snapshot of the wasmbox
// interpreter (format 1, no image), a new bash in its directory that
// declares the interpreter's state (see interpStateScript).
func (s *Sandbox) restoreShell(st wire.State, bashImg *runtime.MemoryImage) error {
	ctx := contextBackground()
	cfg, err := s.bashConfig(ctx, st.Dir)
	if err != nil {
		return err
	}
	var b *bashsession.Session
	if bashImg != nil {
		b, err = bashsession.NewFromImage(ctx, cfg, bashImg)
	} else {
		b, err = bashsession.New(ctx, cfg)
	}
	if err != nil {
		return err
	}
	if bashImg == nil {
		if err := restoreInterpState(ctx, b, st); err != nil {
			b.Close()
			return err
		}
	}
	s.sh.Close()
	s.sh = b
	return nil
}

// optionsForRestore rebuilds the options a sandbox was created with.
func (s *Sandbox) optionsForRestore() []Option {
	cfg := *s.cfg
	return []Option{func(c *config) { *c = cfg }}
}

// apply makes fsys hold exactly the entries of img (besides /dev, mount
// points and what they hold).
func apply(fsys *vfs.VFS, img *snapImage) error {
	want := map[string]bool{}
	for _, e := range img.Entries {
		want[e.Path] = true
	}
	skip := map[string]bool{"/dev": true}
	for _, mp := range fsys.Mounts() {
		if mp.Path != "/" {
			skip[mp.Path] = true
		}
	}
	var have snapImage
	if err := collect(fsys, "/", skip, &have, nil); err != nil {
		return err
	}
	// Directories that lead to a mount point (/usr/lib for Python's
	// standard library) stay, and so does Python's site-packages
	// directory (not its contents): a snapshot that lacks them (an older
	// one) must not take them away.
	keep := map[string]bool{}
	for p := range skip {
		for d := path.Dir(p); d != "/" && d != "."; d = path.Dir(d) {
			keep[d] = true
		}
	}
	for d := pythonSitePackages; d != "/"; d = path.Dir(d) {
		keep[d] = true
	}
	for i := len(have.Entries) - 1; i >= 0; i-- {
		if p := have.Entries[i].Path; !want[p] && !keep[p] {
			if err := fsys.RemoveAll(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return err
			}
		}
	}
	var dirs []snapEntry
	for _, e := range img.Entries {
		if skip[e.Path] || underAny(e.Path, skip) {
			continue
		}
		switch e.Kind {
		case kindDir:
			if fi, _, err := fsys.LstatIfPossible(e.Path); err == nil && !fi.IsDir() {
				if err := fsys.Remove(e.Path); err != nil {
					return err
				}
			}
			if err := fsys.Mkdir(e.Path, e.Mode.Perm()); err != nil && !errors.Is(err, fs.ErrExist) {
				return err
			}
			if err := fsys.Chmod(e.Path, e.Mode); err != nil {
				return err
			}
			dirs = append(dirs, e)
		case kindFile:
			if fi, _, err := fsys.LstatIfPossible(e.Path); err == nil && !fi.Mode().IsRegular() {
				if err := fsys.RemoveAll(e.Path); err != nil {
					return err
				}
			}
			f, err := fsys.OpenFile(e.Path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC|noFollow, e.Mode.Perm())
			if err != nil {
				return err
			}
			_, werr := f.Write(e.Data)
			if err := errors.Join(werr, f.Close()); err != nil {
				return err
			}
			if err := fsys.Chmod(e.Path, e.Mode); err != nil {
				return err
			}
			if err := fsys.Chtimes(e.Path, e.Mtime, e.Mtime); err != nil {
				return err
			}
		case kindSymlink:
			if _, _, err := fsys.LstatIfPossible(e.Path); err == nil {
				if err := fsys.RemoveAll(e.Path); err != nil {
					return err
				}
			}
			if err := fsys.SymlinkIfPossible(e.Target, e.Path); err != nil {
				return err
			}
			// Symlink times are not settable through vfs.FS (Chtimes
			// follows); they are kept as restored.
		}
	}
	// Directory times last, deepest first: creating children changes them.
	for i := len(dirs) - 1; i >= 0; i-- {
		if err := fsys.Chtimes(dirs[i].Path, dirs[i].Mtime, dirs[i].Mtime); err != nil {
			return err
		}
	}
	return nil
}

func underAny(p string, set map[string]bool) bool {
	for q := range set {
		if len(p) > len(q) && p[:len(q)] == q && p[len(q)] == '/' {
			return true
		}
	}
	return false
}

func contextBackground() context.Context { return context.Background() }

const noFollow = syscall.O_NOFOLLOW
