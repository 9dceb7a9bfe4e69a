// Package morecmds holds the commands that agents reach for beyond the
// core set (issue 14): cmp, dd, hexdump/hd, expand, unexpand, fmt,
// base32, envsubst, sum, tsort, link, unlink, pr, csplit, bc, file,
// iconv, xz/unxz/xzcat, bzip2/bunzip2/bzcat and rg. They register in init
// and are linked into the coreutils module (tools/coreutils).
//
// Each behaves like its GNU (or, for rg, ripgrep) counterpart for the
// common flags: the same output, messages and exit statuses, checked by
// the golden cases under tools/testdata/golden/<command>/, which goldengen
// records from the real tools of this machine.
package morecmds
