// Package fileutils holds the file commands of the multi-call tool program:
// cat, ls, cp, mv, rm, mkdir, rmdir, touch, ln, readlink, realpath, stat, du,
// df, tree, find, truncate, tar, gzip, gunzip, zcat, zip, unzip, diff, patch,
// od, xxd, strings, split, chmod, chown, chgrp and install.
//
// Every command registers itself in init with cmd.Register and follows GNU
// coreutils behaviour in the C locale: the same options, output formats,
// error messages (file names quoted 'like this') and exit statuses.
//
// Permission bits and owners are not part of WASI preview 1: every command
// that shows, tests or sets them (ls -l, stat, find -perm/-user/-writable,
// cp -p, mkdir -m, tar, unzip, chmod, chown, install) goes through
// cmd.Stat, cmd.Lstat, cmd.Chmod and cmd.Chown, which ask the sandbox host.
// The sandbox user is uid/gid 1000 and not root: chmod, chown, chgrp,
// install and cp -p apply the kernel's rules for an unprivileged user
// themselves (only the owner changes a mode; no giving files away; group
// changes only to the user's own groups), whatever the host would allow. Commands
// reach files through the os package (in wasip1 that is the sandbox VFS via
// WASI) and their standard streams only through cmd.Env, so they run
// in-process in unit tests as well as inside the sandbox.
package fileutils
