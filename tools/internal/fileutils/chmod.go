package fileutils

import (
	"bufio"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"syscall"

	"github.com/wasmbox/wasmbox/tools/internal/cmd"
)

// chmod, chown and chgrp change the POSIX metadata that WASI cannot
// express, through the sandbox host (cmd.Chmod, cmd.Chown). The sandbox
// user is not root, so they enforce the kernel's rules for an unprivileged
// user themselves (whatever the host would allow): only a file's owner may
// change its mode; nobody may give a file away; the owner may change its
// group to one of the user's own groups.

func init() {
	cmd.Register("chmod", chmodMain)
	cmd.Register("chown", chownMain)
	cmd.Register("chgrp", chgrpMain)
}

var chmodUsage = usage{
	synopsis: "[OPTION]... MODE[,MODE]... FILE...\n  or:  chmod [OPTION]... OCTAL-MODE FILE...\n  or:  chmod [OPTION]... --reference=RFILE FILE...",
	text: `Change the mode of each FILE to MODE.
With --reference, change the mode of each FILE to that of RFILE.

  -c, --changes          like verbose but report only when a change is made
  -f, --silent, --quiet  suppress most error messages
  -v, --verbose          output a diagnostic for every file processed
      --reference=RFILE  use RFILE's mode instead of MODE values
  -R, --recursive        change files and directories recursively
      --preserve-root    fail to operate recursively on '/'

Each MODE is of the form '[ugoa]*([-+=]([rwxXst]*|[ugo]))+|[-+=][0-7]+'.
`,
	bad: 1,
}

// isModeArg reports whether a "-..." argument is a symbolic mode such as
// -w or -x,g+r rather than an option: GNU chmod accepts those.
func isModeArg(a string) bool {
	if len(a) < 2 || a[0] != '-' || a == "--" {
		return false
	}
	return strings.Trim(a[1:], "rwxXstugoa0123456789=+-,") == ""
}

// changeReport says what a chmod/chown -v or -c prints.
type changeReport struct {
	verbose, changes, silent bool
}

// option sets the report option named (-c, -f, -v of chmod, chown and
// chgrp) and says whether name was one.
func (r *changeReport) option(name string) bool {
	switch name {
	case "changes":
		r.changes = true
	case "silent", "quiet":
		r.silent = true
	case "verbose":
		r.verbose = true
	default:
		return false
	}
	return true
}

// chmodState is one chmod run.
type chmodState struct {
	e       *cmd.Env
	out     *bufio.Writer
	rep     changeReport
	mode    string // MODE operand; "" with --reference
	refBits uint32
	ref     bool
	status  int
}

func chmodMain(e *cmd.Env) int {
	// Modes like -w or -x look like options: take them out first.
	var modeFromDash string
	args := []string{e.Args[0]}
	for i, a := range e.Args[1:] {
		if a == "--" {
			args = append(args, e.Args[1+i:]...)
			break
		}
		if modeFromDash == "" && isModeArg(a) {
			modeFromDash = a
			continue
		}
		args = append(args, a)
	}
	sub := *e
	sub.Args = args
	opts, operands, st, done := getopt(&sub, "c,changes f,silent ,quiet v,verbose ,reference: R,recursive ,preserve-root ,no-preserve-root", chmodUsage)
	if done {
		return st
	}
	c := &chmodState{e: e}
	recursive := false
	ref, hasRef := "", false
	for _, o := range opts {
		if c.rep.option(o.name) {
			continue
		}
		switch o.name {
		case "recursive":
			recursive = true
		case "reference":
			ref, hasRef = o.val, true
		}
	}
	if modeFromDash != "" {
		operands = append([]string{modeFromDash}, operands...)
	}
	if hasRef {
		fi, err := metaStat(ref)
		if err != nil {
			e.Errorf("failed to get attributes of %s: %s", quote(ref), strerror(err))
			return 1
		}
		c.ref, c.refBits = true, unixMode(fi.Mode())
	} else {
		if len(operands) == 0 {
			return usageErr(e, chmodUsage, "missing operand")
		}
		c.mode, operands = operands[0], operands[1:]
		if _, err := parseMode(c.mode, 0, false, umask); err != nil {
			return usageErr(e, chmodUsage, "invalid mode: %s", quote(c.mode))
		}
	}
	if len(operands) == 0 {
		if c.ref {
			return usageErr(e, chmodUsage, "missing operand")
		}
		return usageErr(e, chmodUsage, "missing operand after %s", quote(c.mode))
	}
	c.out = newOut(e)
	defer c.out.Flush()
	for _, f := range operands {
		if recursive && preserveRoot(opts) && isRoot(f) {
			c.out.Flush()
			rootRefused(e)
			c.status = 1
			continue
		}
		c.one(f, true, recursive)
	}
	return c.status
}

// preserveRoot reports whether --preserve-root is in effect (the last of
// --preserve-root and --no-preserve-root wins; GNU's default is off).
func preserveRoot(opts []opt) bool {
	on := false
	for _, o := range opts {
		switch o.name {
		case "preserve-root":
			on = true
		case "no-preserve-root":
			on = false
		}
	}
	return on
}

// isRoot reports whether name resolves to "/".
func isRoot(name string) bool {
	a, err := metaStat(name)
	if err != nil {
		return false
	}
	r, err := metaStat("/")
	return err == nil && sameFile(a, r)
}

func rootRefused(e *cmd.Env) {
	e.Errorf("it is dangerous to operate recursively on '/'")
	e.Errorf("use --no-preserve-root to override this failsafe")
}

// one changes the mode of name; top marks a command-line operand (whose
// symbolic links are followed; those met while recursing are skipped, as
// Linux cannot change a link's own mode).
func (c *chmodState) one(name string, top, recursive bool) {
	lfi, err := metaLstat(name)
	if err != nil {
		c.fail("cannot access %s: %s", quote(name), strerror(err))
		if c.rep.verbose {
			c.out.WriteString(quote(name) + " could not be accessed\n")
		}
		return
	}
	fi := lfi
	if lfi.Mode()&fs.ModeSymlink != 0 {
		if !top {
			if c.rep.verbose {
				c.out.WriteString("neither symbolic link " + quote(name) + " nor referent has been changed\n")
			}
			return
		}
		if fi, err = metaStat(name); err != nil {
			c.fail("cannot operate on dangling symlink %s", quote(name))
			return
		}
	}
	old := unixMode(fi.Mode())
	var bits uint32
	if c.ref {
		bits = c.refBits
	} else {
		bits, err = parseMode(c.mode, old, fi.IsDir(), umask)
		if err != nil {
			c.fail("invalid mode: %s", quote(c.mode))
			return
		}
		if fi.IsDir() && isOctalMode(c.mode) && len(c.mode) < 5 {
			// An octal mode of fewer than five digits keeps a
			// directory's set-user-ID and set-group-ID bits.
			bits |= old & 0o6000
		}
	}
	err = nil
	if uid, _ := cmd.Owner(fi); !mayChangeMode(uid) {
		err = syscall.EPERM
	} else if bits != old {
		err = renameErr(cmd.Chmod(absName(name), fileMode(bits)), name)
	}
	if err != nil {
		c.out.Flush()
		c.fail("changing permissions of %s: %s", quote(name), strerror(err))
		if c.rep.verbose {
			fmt.Fprintf(c.out, "failed to change mode of %s from %04o (%s) to %04o (%s)\n",
				quote(name), old, modeString(fi.Mode())[1:], bits, modeString(fileMode(bits))[1:])
		}
	} else if c.rep.verbose || c.rep.changes && bits != old {
		if bits == old {
			fmt.Fprintf(c.out, "mode of %s retained as %04o (%s)\n", quote(name), old, modeString(fi.Mode())[1:])
		} else {
			fmt.Fprintf(c.out, "mode of %s changed from %04o (%s) to %04o (%s)\n",
				quote(name), old, modeString(fi.Mode())[1:], bits, modeString(fileMode(bits))[1:])
		}
	}
	if err == nil && !c.ref && !hasWho(c.mode) {
		// Without [ugoa] the umask limits a symbolic mode; GNU tells when
		// the result keeps bits the mode naively asked to clear (chmod -w
		// on a 0666 file leaves 0466).
		if full, perr := parseMode(c.mode, old, fi.IsDir(), 0); perr == nil && bits&^full != 0 {
			c.out.Flush()
			c.fail("%s: new permissions are %s, not %s", quoteIf(name), modeString(fileMode(bits))[1:], modeString(fileMode(full))[1:])
		}
	}
	if recursive && fi.IsDir() && (lfi.Mode()&fs.ModeSymlink == 0) {
		ents, err := os.ReadDir(name)
		if err != nil {
			c.fail("cannot read directory %s: %s", quote(name), strerror(err))
			return
		}
		for _, ent := range ents {
			c.one(joinPath(name, ent.Name()), false, true)
		}
	}
}

func (c *chmodState) fail(format string, a ...any) {
	c.status = 1
	if !c.rep.silent {
		c.out.Flush()
		c.e.Errorf(format, a...)
	}
}

// isOctalMode reports whether a MODE operand is numeric.
func isOctalMode(s string) bool { return s != "" && strings.Trim(s, "01234567") == "" }

// hasWho reports whether every clause of a symbolic mode names its users
// (so the umask plays no part). Octal modes count as having them.
func hasWho(s string) bool {
	if isOctalMode(s) {
		return true
	}
	for _, cl := range strings.Split(s, ",") {
		if cl == "" || strings.IndexByte("ugoa", cl[0]) < 0 {
			return false
		}
	}
	return true
}

// mayChangeMode reports whether the running user may chmod a file owned
// by uid: root, or the owner.
func mayChangeMode(uid int) bool {
	self, _ := selfIDs()
	return self == 0 || uid < 0 || uint32(uid) == self
}

// userGroups returns the groups of the running user: the primary group and
// those of /etc/group that list the user as a member.
func userGroups(names *idNames) map[uint32]bool {
	uid, gid := selfIDs()
	gs := map[uint32]bool{gid: true}
	if names == nil {
		return gs
	}
	user := names.user(uid)
	f, err := os.Open("/etc/group")
	if err != nil {
		return gs
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Split(sc.Text(), ":")
		if len(fields) < 4 {
			continue
		}
		id, err := strconv.ParseUint(fields[2], 10, 32)
		if err != nil {
			continue
		}
		for _, m := range strings.Split(fields[3], ",") {
			if m == user {
				gs[uint32(id)] = true
			}
		}
	}
	return gs
}

var chownUsage = usage{
	synopsis: "[OPTION]... [OWNER][:[GROUP]] FILE...\n  or:  chown [OPTION]... --reference=RFILE FILE...",
	text: `Change the owner and/or group of each FILE to OWNER and/or GROUP.
With --reference, change the owner and group of each FILE to those of RFILE.

  -c, --changes          like verbose but report only when a change is made
  -f, --silent, --quiet  suppress most error messages
  -v, --verbose          output a diagnostic for every file processed
      --dereference      affect the referent of each symbolic link (this is
                         the default), rather than the symbolic link itself
  -h, --no-dereference   affect symbolic links instead of any referenced file
      --reference=RFILE  use RFILE's owner and group rather than
                         specifying OWNER:GROUP values
  -R, --recursive        operate on files and directories recursively

The following options modify how a hierarchy is traversed when the -R
option is also specified.  If more than one is specified, only the final
one takes effect.

  -H                     if a command line argument is a symbolic link
                         to a directory, traverse it
  -L                     traverse every symbolic link to a directory
                         encountered
  -P                     do not traverse any symbolic links (default)

Owner is unchanged if missing.  Group is unchanged if missing, but changed
to login group if implied by a ':' following a symbolic OWNER.
OWNER and GROUP may be numeric as well as symbolic.
`,
	bad: 1,
}

var chgrpUsage = usage{
	synopsis: "[OPTION]... GROUP FILE...\n  or:  chgrp [OPTION]... --reference=RFILE FILE...",
	text: `Change the group of each FILE to GROUP.
With --reference, change the group of each FILE to that of RFILE.

  -c, --changes          like verbose but report only when a change is made
  -f, --silent, --quiet  suppress most error messages
  -v, --verbose          output a diagnostic for every file processed
      --dereference      affect the referent of each symbolic link (this is
                         the default), rather than the symbolic link itself
  -h, --no-dereference   affect symbolic links instead of any referenced file
      --reference=RFILE  use RFILE's group rather than specifying a GROUP value
  -R, --recursive        operate on files and directories recursively

The following options modify how a hierarchy is traversed when the -R
option is also specified.  If more than one is specified, only the final
one takes effect.

  -H                     if a command line argument is a symbolic link
                         to a directory, traverse it
  -L                     traverse every symbolic link to a directory
                         encountered
  -P                     do not traverse any symbolic links (default)
`,
	bad: 1,
}

// chownState is one chown or chgrp run. uid/gid -1 leave that id alone.
type chownState struct {
	e        *cmd.Env
	out      *bufio.Writer
	rep      changeReport
	names    idNames
	groups   map[uint32]bool
	uid, gid int
	self     uint32 // the running user
	deref    bool
	follow   byte // -R's treatment of symbolic links: 'P', 'H' or 'L'
	seen     map[[2]uint64]bool
	chgrp    bool
	status   int
}

func chownMain(e *cmd.Env) int { return chownRun(e, false) }
func chgrpMain(e *cmd.Env) int { return chownRun(e, true) }

func chownRun(e *cmd.Env, chgrp bool) int {
	u := chownUsage
	if chgrp {
		u = chgrpUsage
	}
	opts, operands, st, done := getopt(e, "c,changes f,silent ,quiet v,verbose ,dereference h,no-dereference ,reference: R,recursive H L P ,from: ,preserve-root ,no-preserve-root", u)
	if done {
		return st
	}
	c := &chownState{e: e, uid: -1, gid: -1, deref: true, chgrp: chgrp}
	c.self, _ = selfIDs()
	recursive, noDeref := false, false
	ref, hasRef := "", false
	for _, o := range opts {
		if c.rep.option(o.name) {
			continue
		}
		switch o.name {
		case "recursive":
			recursive = true
		case "no-dereference":
			noDeref = true
		case "dereference":
			noDeref = false
		case "H", "L", "P":
			c.follow = o.name[0]
		case "reference":
			ref, hasRef = o.val, true
		case "from":
			return usageErr(e, u, "--from is not supported in the sandbox")
		}
	}
	if c.follow == 0 {
		c.follow = 'P'
	}
	// -R with -P changes the links themselves; otherwise (no -R, or
	// -H/-L) the referents, unless -h.
	c.deref = !noDeref && (!recursive || c.follow != 'P')
	if hasRef {
		fi, err := metaStat(ref)
		if err != nil {
			e.Errorf("failed to get attributes of %s: %s", quote(ref), strerror(err))
			return 1
		}
		uid, gid := cmd.Owner(fi)
		c.gid = gid
		if !chgrp {
			c.uid = uid
		}
	} else {
		if len(operands) == 0 {
			return usageErr(e, u, "missing operand")
		}
		spec := operands[0]
		operands = operands[1:]
		if ok := c.parseSpec(spec); !ok {
			return 1
		}
		if len(operands) == 0 {
			return usageErr(e, u, "missing operand after %s", quote(spec))
		}
	}
	if len(operands) == 0 {
		return usageErr(e, u, "missing operand")
	}
	c.groups = userGroups(&c.names)
	c.out = newOut(e)
	defer c.out.Flush()
	for _, f := range operands {
		if recursive && preserveRoot(opts) && isRoot(f) {
			c.out.Flush()
			rootRefused(e)
			c.status = 1
			continue
		}
		c.one(f, true, recursive)
	}
	return c.status
}

// parseSpec reads OWNER[:[GROUP]] (chown) or GROUP (chgrp).
func (c *chownState) parseSpec(spec string) bool {
	if c.chgrp {
		gid, ok := c.resolve(false, spec)
		if !ok {
			c.e.Errorf("invalid group: %s", quote(spec))
			return false
		}
		c.gid = gid
		return true
	}
	user, group, hasColon := strings.Cut(spec, ":")
	if !hasColon {
		// The obsolete OWNER.GROUP form, when OWNER.GROUP is not a user.
		if u, g, dot := strings.Cut(spec, "."); dot {
			if _, ok := c.resolve(true, spec); !ok {
				user, group, hasColon = u, g, true
			}
		}
	}
	if user != "" {
		uid, ok := c.resolve(true, user)
		if !ok {
			c.e.Errorf("invalid user: %s", quote(spec))
			return false
		}
		c.uid = uid
		if hasColon && group == "" {
			// "OWNER:" means OWNER's login group.
			if g, ok := loginGroup(user, uid); ok {
				c.gid = g
			} else {
				c.e.Errorf("invalid spec: %s", quote(spec))
				return false
			}
		}
	}
	if group != "" {
		gid, ok := c.resolve(false, group)
		if !ok {
			c.e.Errorf("invalid group: %s", quote(spec))
			return false
		}
		c.gid = gid
	}
	return true
}

// resolve turns a user or group name, or a number, into an id.
func (c *chownState) resolve(user bool, s string) (int, bool) {
	if id, ok := c.names.lookup(user, s); ok {
		return int(id), true
	}
	if n, err := strconv.ParseUint(s, 10, 32); err == nil && n != 1<<32-1 {
		return int(n), true
	}
	return 0, false
}

// loginGroup is the primary group of a user in /etc/passwd.
func loginGroup(name string, uid int) (int, bool) {
	f, err := os.Open("/etc/passwd")
	if err != nil {
		return 0, false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Split(sc.Text(), ":")
		if len(fields) < 4 {
			continue
		}
		if fields[0] == name || fields[2] == strconv.Itoa(uid) {
			if g, err := strconv.ParseUint(fields[3], 10, 32); err == nil {
				return int(g), true
			}
		}
	}
	return 0, false
}

// permitted applies the rules for an unprivileged user: no giving files
// away, group changes only by the owner and only to the user's groups.
func (c *chownState) permitted(uid, gid int) bool {
	self := c.self
	if self == 0 {
		return true
	}
	if uid >= 0 && uint32(uid) != self {
		return false // not the owner: no change at all, not even a no-op
	}
	if c.uid >= 0 && uint32(c.uid) != uint32(uid) {
		return false
	}
	if c.gid >= 0 && c.gid != gid && !c.groups[uint32(c.gid)] {
		return false
	}
	return true
}

// spec renders "user:group", "user" or "group" for -v.
func (c *chownState) spec(uid, gid int) string {
	var parts []string
	if c.uid >= 0 && !c.chgrp {
		parts = append(parts, c.names.user(uint32(uid)))
	}
	if c.gid >= 0 {
		parts = append(parts, c.names.group(uint32(gid)))
	}
	return strings.Join(parts, ":")
}

// traverse decides whether -R descends into the directory name (reached
// through a symbolic link or not): -P never follows links, -H only those
// on the command line, -L all of them, each directory once.
func (c *chownState) traverse(name string, top bool) bool {
	lfi, err := metaLstat(name)
	if err != nil {
		return false
	}
	if lfi.Mode()&fs.ModeSymlink != 0 && !(c.follow == 'L' || c.follow == 'H' && top) {
		return false
	}
	if c.follow == 'L' {
		fi, err := metaStat(name)
		if err != nil {
			return false
		}
		sx := sysStat(fi)
		key := [2]uint64{sx.dev, sx.ino}
		if c.seen == nil {
			c.seen = map[[2]uint64]bool{}
		}
		if c.seen[key] {
			return false
		}
		c.seen[key] = true
	}
	return true
}

// one changes the owner of name and, with recursive, of everything below
// it (with -P, the default, symbolic links met on the way are changed
// themselves, not followed).
func (c *chownState) one(name string, top, recursive bool) {
	stat := metaLstat
	if c.deref {
		stat = metaStat
	}
	fi, err := stat(name)
	if err != nil {
		c.fail("cannot access %s: %s", quote(name), strerror(err))
		return
	}
	if recursive && fi.IsDir() && c.traverse(name, top) {
		// Like GNU (fts postorder), a directory is changed after its
		// contents.
		ents, err := os.ReadDir(name)
		if err != nil {
			c.fail("cannot read directory %s: %s", quote(name), strerror(err))
		}
		for _, ent := range ents {
			c.one(joinPath(name, ent.Name()), false, true)
		}
	}
	uid, gid := cmd.Owner(fi)
	nu, ng := uid, gid
	if c.uid >= 0 {
		nu = c.uid
	}
	if c.gid >= 0 {
		ng = c.gid
	}
	what := "ownership"
	if c.chgrp || c.uid < 0 {
		what = "group"
	}
	err = nil
	if !c.permitted(uid, gid) {
		err = syscall.EPERM
	} else if nu != uid || ng != gid {
		setU, setG := -1, -1
		if nu != uid {
			setU = nu
		}
		if ng != gid {
			setG = ng
		}
		if c.deref {
			err = renameErr(cmd.Chown(absName(name), setU, setG), name)
		} else {
			err = renameErr(cmd.Lchown(absName(name), setU, setG), name)
		}
	}
	changed := nu != uid || ng != gid
	switch {
	case err != nil:
		verb := "changing ownership of"
		if c.chgrp {
			verb = "changing group of"
		}
		c.fail("%s %s: %s", verb, quote(name), strerror(err))
		if c.rep.verbose {
			fmt.Fprintf(c.out, "failed to change %s of %s from %s to %s\n", what, quote(name), c.spec(uid, gid), c.spec(nu, ng))
		}
	case changed && (c.rep.verbose || c.rep.changes):
		fmt.Fprintf(c.out, "changed %s of %s from %s to %s\n", what, quote(name), c.spec(uid, gid), c.spec(nu, ng))
	case !changed && c.rep.verbose:
		fmt.Fprintf(c.out, "%s of %s retained as %s\n", what, quote(name), c.spec(uid, gid))
	}
}

func (c *chownState) fail(format string, a ...any) {
	c.status = 1
	if !c.rep.silent {
		c.out.Flush()
		c.e.Errorf(format, a...)
	}
}
