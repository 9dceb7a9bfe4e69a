// Package textutils holds the text-processing commands of the multi-call
// tool program: head tail wc sort uniq cut tr tee grep egrep fgrep sed
// comm join paste nl fold rev tac column. The heavy text commands, jq and
// awk, are in packages jqcmd and awkcmd, built into tool modules of their
// own (tools/jq, tools/awk) so that these commands do not pay for gojq and
// GoAWK; they share this package's I/O conventions through package textio.
//
// Every command registers itself with package cmd in an init function and
// follows GNU coreutils behaviour in the C locale: the same option letters,
// output formats, error messages ("grep: x: No such file or directory") and
// exit statuses. Standard streams come only from cmd.Env, so each command
// can be run in-process by tests; files are opened through the os package,
// which under wasip1 is the sandbox's virtual filesystem.
//
// POSIX regular expressions (basic and extended, as used by grep, sed, nl
// and tac) are parsed by regex.go into a small tree that is rendered to
// Go's RE2 syntax and matched leftmost-longest; patterns with
// back-references run on a backtracking matcher over the same tree, with a
// step budget (ErrRegexTooComplex). A literal that every match must
// contain is searched first, so most non-matching lines cost one
// bytes.Index. grep -P uses RE2 syntax directly (no look-around).
//
// # Decisions and limits
//
//   - tail -f/-F is accepted and prints the file once: a sandboxed command
//     that never ends would only run into its deadline.
//   - sed's e command and s///e flag are rejected (no process spawning
//     from inside sed).
//   - Everything is byte-oriented (LC_ALL=C): wc -m counts bytes, case
//     folding is ASCII.
package textutils
