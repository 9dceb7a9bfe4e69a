// Package fileutils holds the file commands of the multi-call tool program:
// cat, ls, cp, mv, rm, mkdir, rmdir, touch, ln, readlink, realpath, stat, du,
// df, tree, find, truncate, tar, gzip, gunzip, zcat, zip, unzip, diff, patch,
// od, xxd, strings and split.
//
// Every command registers itself in init with cmd.Register and follows GNU
// coreutils behaviour in the C locale: the same options, output formats,
// error messages (file names quoted 'like this') and exit statuses. Commands
// reach files through the os package (in wasip1 that is the sandbox VFS via
// WASI) and their standard streams only through cmd.Env, so they run
// in-process in unit tests as well as inside the sandbox.
package fileutils
