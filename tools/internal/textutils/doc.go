// Package textutils holds the text-processing commands of the multi-call
// tool program: head tail wc sort uniq cut tr tee grep egrep fgrep sed awk
// jq comm join paste nl fold rev tac column.
//
// Every command registers itself with package cmd in an init function and
// follows GNU coreutils behaviour in the C locale: the same option letters,
// output formats, error messages ("grep: x: No such file or directory") and
// exit statuses. Standard streams come only from cmd.Env, so each command
// can be run in-process by tests; files are opened through the os package,
// which under wasip1 is the sandbox's virtual filesystem.
//
// POSIX regular expressions (basic and extended, as used by grep and sed)
// are translated to Go's RE2 syntax by the translator in regex.go; patterns
// with back-references fall back to a small backtracking matcher.
package textutils
