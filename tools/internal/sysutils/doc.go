// Package sysutils holds the system commands of the multi-call tool program:
// echo, printf, env, test, expr, date, seq, xargs, timeout, the checksum
// tools and the commands that describe the sandbox (uname, id, hostname...).
// Every command registers itself in init with cmd.Register.
package sysutils
