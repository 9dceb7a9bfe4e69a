package fileutils

import (
	"errors"
	"io/fs"
	"strconv"
	"strings"
	"sync"

	"github.com/wasmbox/wasmbox/tools/internal/cmd"
)

var errBadMode = errors.New("invalid mode")

// parseMode applies a chmod-style MODE (octal like "755", or symbolic like
// "u+x,go-w", "a=rX") to base and returns the new permission bits
// (including setuid/setgid/sticky as 04000/02000/01000). umask is applied to
// symbolic clauses without a "who" part, as chmod does.
func parseMode(s string, base uint32, isDir bool, umask uint32) (uint32, error) {
	if s == "" {
		return 0, errBadMode
	}
	if s[0] >= '0' && s[0] <= '7' {
		v, err := strconv.ParseUint(s, 8, 32)
		if err != nil || v > 07777 {
			return 0, errBadMode
		}
		return uint32(v), nil
	}
	m := base
	for _, clause := range strings.Split(s, ",") {
		i := 0
		var who uint32
		for ; i < len(clause); i++ {
			switch clause[i] {
			case 'u':
				who |= 04700
			case 'g':
				who |= 02070
			case 'o':
				who |= 01007
			case 'a':
				who |= 07777
			default:
				goto ops
			}
		}
	ops:
		mask := ^umask & 07777
		if who != 0 {
			mask = 07777
		} else {
			who = 07777
		}
		if i == len(clause) {
			return 0, errBadMode
		}
		for i < len(clause) {
			op := clause[i]
			if op != '+' && op != '-' && op != '=' {
				return 0, errBadMode
			}
			i++
			var perm uint32
			for ; i < len(clause); i++ {
				c := clause[i]
				switch c {
				case 'r':
					perm |= 0444
				case 'w':
					perm |= 0222
				case 'x':
					perm |= 0111
				case 'X':
					if isDir || m&0111 != 0 {
						perm |= 0111
					}
				case 's':
					perm |= 06000
				case 't':
					perm |= 01000
				case 'u':
					perm |= copyWho(m, 6)
				case 'g':
					perm |= copyWho(m, 3)
				case 'o':
					perm |= copyWho(m, 0)
				default:
					goto next
				}
			}
		next:
			perm &= who & mask
			switch op {
			case '+':
				m |= perm
			case '-':
				m &^= perm
			case '=':
				m = m&^(who&07777) | perm
			}
		}
	}
	return m, nil
}

// copyWho replicates the rwx bits at shift into all three classes.
func copyWho(m uint32, shift uint) uint32 {
	b := (m >> shift) & 7
	return b<<6 | b<<3 | b
}

// umask is the sandbox's file creation mask: WASI has none, so the tools
// apply the usual 022 themselves when they set the mode of a new file.
const umask = 0o022

// fileMode converts POSIX permission bits (07777) to an fs.FileMode.
func fileMode(bits uint32) fs.FileMode {
	m := fs.FileMode(bits & 0o777)
	if bits&0o4000 != 0 {
		m |= fs.ModeSetuid
	}
	if bits&0o2000 != 0 {
		m |= fs.ModeSetgid
	}
	if bits&0o1000 != 0 {
		m |= fs.ModeSticky
	}
	return m
}

// chmodBits sets the POSIX permission bits of name through the sandbox host
// (WASI cannot express them).
func chmodBits(name string, bits uint32) error {
	return renameErr(cmd.Chmod(absName(name), fileMode(bits)), name)
}

// preserveMeta gives dst the mode and, where permitted, the owner of the
// source whose metadata is fi (cp -p, cp -a, gzip). Permitted means the
// rules of the kernel for the running user, enforced here whatever the
// sandbox host would allow: root keeps both ids; anyone else keeps only the
// group, and only one of their own groups (the copy stays theirs). Failing
// to preserve ownership is silent, as for a non-root GNU cp.
func preserveMeta(dst string, fi fs.FileInfo, owner bool) error {
	bits := unixMode(fi.Mode())
	if owner && !preserveOwner(dst, fi) {
		// Someone else's set-id program must not become the copier's:
		// GNU cp drops the bits when it cannot keep the owner.
		bits &^= 0o6000
	}
	return chmodBits(dst, bits)
}

// preserveOwner gives dst the owner and group of fi as far as the running
// user may (root: both; others: their own groups only) and reports
// whether the owner is the source's.
func preserveOwner(dst string, fi fs.FileInfo) bool {
	uid, gid := cmd.Owner(fi)
	if uid < 0 {
		return true
	}
	self, _ := selfIDs()
	if self == 0 {
		return cmd.Chown(absName(dst), uid, gid) == nil
	}
	if ownGroups()[uint32(gid)] {
		cmd.Chown(absName(dst), -1, gid)
	}
	return uint32(uid) == self
}

// ownGroups caches userGroups for commands that copy many files.
var ownGroups = sync.OnceValue(func() map[uint32]bool { return userGroups(&idNames{}) })
