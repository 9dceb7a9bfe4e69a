package shell

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"testing"

	"github.com/wasmbox/wasmbox/internal/sh/syntax"
)

// fidelityCases are scripts on which the interpreter crashed, hung or
// differed from bash (issue 22). Their expected stdout and status are
// GNU bash 5.2's: WASMBOX_BASH=/bin/bash go test ./shell -run
// TestFidelityCasesAgainstBash checks them against a real bash.
var fidelityCases = []scriptCase{
	// Arithmetic on array elements: the operand of ++, -- and the
	// assignment operators may be name[subscript] (it panicked).
	{"arith assoc count", `declare -A c; for w in a b a; do ((c[$w]++)); done; echo ${c[a]} ${c[b]}`, "2 1\n", 0, ""},
	{"arith elem assign ops", `a=(1 2 3); i=1; (( a[i] += 5 )); echo ${a[@]}; (( a[i++]++ )); echo ${a[@]} $i; (( ++a[0], a[5] = 7, a[2] *= 2 )); echo ${a[@]}; (( a[-1]-- )); echo ${a[5]}`,
		"1 7 3\n1 8 3 2\n2 8 6 7\n6\n", 0, ""},
	{"arith elem keeps attributes", `x=5; export x; (( x++ )); declare -p x; declare -A m; (( m[k] = 3 )); (( m[k] <<= 2 )); declare -p m`, "declare -x x=\"6\"\ndeclare -A m=([k]=\"12\" )\n", 0, ""},
	{"arith elem of unset array", `(( b[3] = 7 )); declare -p b; (( n++ )); echo $n`, "declare -a b=([3]=\"7\")\n1\n", 0, ""},
	// declare -A m=(k v ...): keys and values alternate (it panicked).
	{"assoc key value pairs", `declare -A A=(k v); declare -p A; declare -A B=(k v x); echo "${B[k]}|${B[x]}|${#B[@]}"; declare -A C=([a]=1 b); echo "${C[a]} ${#C[@]} s=$?"`,
		"declare -A A=([k]=\"v\" )\nv||2\n1 1 s=0\n", 0, "must use subscript"},
	// break and continue (two of them hung).
	{"break bad count", "x=oops\nwhile true; do echo hi; break $x; echo no; done\necho never", "hi\n", 128, "numeric argument required"},
	{"break in loop condition", `while break; do echo x; done; echo done; for i in 1 2 3; do echo i=$i; while break; do echo x; done; done; i=0; while ((i++ < 2)); do echo $i; until continue; do echo no; done; done`,
		"done\ni=1\ni=2\ni=3\n1\n2\n", 0, ""},
	{"break skips the rest of the body", `for i in 1 2; do { break; echo no; }; done; echo a; for i in 1 2; do if break; then echo no; fi; echo no2; done; echo b; for i in 1 2; do echo $i; { continue; echo no; }; done; for i in 1 2; do case x in x) break; echo no;; esac; done; for i in 1 2; do true && break; echo no; done; echo c`,
		"a\nb\n1\n2\nc\n", 0, ""},
	{"break counts", `for i in 1 2; do for j in a b; do echo $i$j; continue 2; done; done; for i in 1 2; do for j in a b; do echo $i$j; break 5; done; done; for i in 1 2; do break 0; echo $i; done; echo s=$?;`,
		"1a\n2a\n1a\ns=1\n", 0, "loop count out of range"},
	{"break outside a function's loops", `f() { break; }; for i in 1 2; do f; echo in$i; done; g() { for i in 1 2 3; do echo g$i; return 4; done; }; g; echo r=$?; for i in 1 2 3; do echo $i; eval break; done`,
		"in1\nin2\ng1\nr=4\n1\n", 0, "only meaningful in a `for', `while', or `until' loop"},
	// Variables whose name is not valid are refused (they reached the
	// session's state and broke its wire format).
	{"for with an invalid name", "for - in a b; do echo hi; done; echo s=$?", "s=1\n", 0, "`-': not a valid identifier"},
	{"nameref to a[@] written", `declare -n r='a[@]'; a=(1 2); r=(X Y)`, "", 1, "`a[@]': not a valid identifier"},
	// A subscript the parser read as arithmetic is an associative key's
	// text (it panicked).
	{"assoc arithmetic-looking key", `declare -A A; i=1; A[i+1]=x; A["i+1"]+=y; echo ${A[i+1]} ${A["i+1"]} ${!A[@]}; echo ${A[$i+1]-unset}`, "xy xy i+1\nunset\n", 0, ""},
	// a[i]+=x appends to one element (it appended to element 0).
	{"append to an element", `b=(x y); b[1]+=z; b[5]+=w; b[0]+=q; declare -p b; i=0; b[i++]+=r; echo $i ${b[0]}; s=str; s[0]+=X; s[2]+=Y; declare -p s; declare -A m=([k]=v); m[k]+=w; m[new]+=n; echo ${m[k]} ${m[new]}; u[3]+=x; declare -p u`,
		"declare -a b=([0]=\"xq\" [1]=\"yz\" [5]=\"w\")\n1 xqr\ndeclare -a s=([0]=\"strX\" [2]=\"Y\")\nvw n\ndeclare -a u=([3]=\"x\")\n", 0, ""},
	{"negative subscript out of range", `a=(0 1 2); echo x ${a[-5]} y; echo s=$?; a[-1]+=0; (( a[-1] += 40 )); echo ${a[@]}`, "x y\ns=0\n0 1 60\n", 0, ""},
	// The word of ${x:-word} and the like is expanded only when used.
	{"unused word not expanded", `x=set; echo ${x:-$(echo ran >&2; : > f1)} ${x-$(: > f2)} ${u:+$(: > f3)} ${u+$(: > f4)} ${x=$(: > f5)} ${x?$(: > f6)} ${x:?$(: > f7)} ${x:=$(: > f8)} "${x:-$(: > f9)}" "${u:+$(: > f10)}"; a=(1); echo "${a[@]:-$(: > f11)}" "${@:+$(: > f12)}"; echo files: f*; echo ${u:-$(echo used)}`,
		"set set set set set set set \n1\nfiles: f*\nused\n", 0, ""},
	{"list default and alternate", `a=(); set --; printf '<%s>' "${a[@]:-x y}" "${a[@]-z}" "${a[@]:+alt}" "${@:-p}" "${@:+q}"; echo
a=(1 2); set -- a b; printf '<%s>' "${a[@]:-x y}" "${a[@]-z}" "${a[@]:+alt}" "${@:-p}" "${@:+q}" "${a[*]:-s}"; echo
a=(""); set -- ""; printf '<%s>' "${a[@]:-x}" "${a[@]-z}" "${a[@]:+alt}" "${a[@]+alt2}" "${@:-p}" "${@:+q}" "${@+r}"; echo
unset a; printf '<%s>' "${a[@]-unset}" "${a[@]+no}"; echo`,
		"<x y><z><p>\n<1><2><1><2><alt><a><b><q><1 2>\n<x><><><alt2><p><><r>\n<unset>\n", 0, ""},
	// $_ is the last argument of the last simple command.
	{"$_", "echo a b >/dev/null; echo \"[$_]\"; true x; echo \"[$_]\"; (( 1 )); [[ 1 ]]; echo \"[$_]\"; f() { echo \"in[$_]\"; }; f arg1 arg2; echo \"[$_]\"; echo e >/dev/null; true | echo \"p[$_]\"; echo $(echo zz) >/dev/null; echo \"[$_]\"; x=1; echo \"[$_]\"\necho l1 >/dev/null\necho \"[$_]\"",
		"[b]\n[x]\n[[x]]\nin[[[x]]]\n[arg2]\np[e]\n[zz]\n[]\n[l1]\n", 0, ""},
	// $$ is the shell's pid in pipeline stages too (it was empty there).
	{"$$ in a pipeline", `echo $$ | { read p; [ "$p" = "$$" ] && echo same; }; { echo "$$"; } | { read q; [ "$q" = $$ ] && echo same2; }; x=$(echo $$ | cat); [ "$x" = "$$" ] && echo same3; [ -n "$$" ] && echo set`,
		"same\nsame2\nsame3\nset\n", 0, ""},
	// ${s/#p/r} and ${s/%p/r} anchor the pattern.
	{"anchored substitution", `s=aXbXc; echo ${s/#a/Z} ${s/#X/Z} ${s/%c/Z} ${s/%X/Z} ${s/#/P} ${s/%/S}
s=aaXaa; echo ${s/#a*/1} ${s/%a*/2} ${s/#*a/3} ${s/%*a/4} ${s//#a/5}; t='#a'; echo ${t/\#a/Q} ${t/"#a"/Q}; p='#a'; echo ${t/$p/R}; q='%a'; echo ${s/$q/W}
a=(ab ba); echo "${a[@]/#b/X}" "${a[@]/%b/Y}"; set -- x1 1x; echo "${@/#1/-}" "${@/%1/+}"`,
		"ZXbXc aXbXc aXbXZ aXbXc PaXbXc aXbXcS\n1 2 3 4 aaXaa\nQ Q\n#a\naaXaW\nab Xa aY ba\nx1 -x x+ 1x\n", 0, ""},
	// "x$@y" is one word per argument.
	{"$@ inside a string", `set -- 1 2; printf '<%s>' "x$@y"; echo; printf '<%s>' "x${@}y" "$@" "a$*b" "-$@-$@-"; echo
set --; printf '<%s>' "x$@y" "$@" "${x}$@" "$@$@"; echo
a=(p "q r"); printf '<%s>' "<${a[@]}>" "${a[@]/#/+}x" "${a[*]}"; echo
set -- "a b"; printf '<%s>' "[$@]"; echo; set -- 1 2; v="x$@y"; echo "$v"`,
		"<x1><2y>\n<x1><2y><1><2><a1 2b><-1><2-1><2->\n<xy>\n<<p><q r>><+p><+q rx><p q r>\n<[a b]>\nx1 2y\n", 0, ""},
	// A non-whitespace IFS character ends a field, an empty one too.
	{"IFS empty fields", `IFS=:; v='a::b:'; printf '<%s>' $v; echo; v=':a'; printf '<%s>' $v x$v; echo; v='a::'; printf '<%s>' $v; echo
IFS=' :'; v=' a : b  c :: d '; printf '<%s>' $v; echo; v=' : a'; printf '<%s>' $v; echo
IFS=:; set -- "a:" b ":c"; printf '<%s>' $@; echo; printf '<%s>' $*; echo
IFS=,; v='1,,2'; for f in $v; do echo "[$f]"; done
unset IFS; v='  a   b  '; printf '<%s>' $v; echo; e=; printf '<%s>' $e ""$e; echo
IFS=:; v=':'; printf '<%s>' $v; echo; v='::'; printf '<%s>' $v; echo; printf '<%s>' $(echo 'x::y'); echo`,
		"<a><><b>\n<><a><x><a>\n<a><>\n<a><b><c><><d>\n<><a>\n<a><><b><><c>\n<a><><b><><c>\n[1]\n[]\n[2]\n<a><b>\n<>\n<>\n<><>\n<x><><y>\n", 0, ""},
	// A bare return keeps $?.
	{"bare return", `f() { false; return; }; f; echo r=$?; g() { (exit 3); return; }; g; echo r=$?; h() { true; return; }; h; echo r=$?; k() { if false; then :; else return; fi; }; k; echo r=$?`,
		"r=1\nr=3\nr=0\nr=1\n", 0, ""},
	// errexit: a compound command's status does not trigger it by
	// itself, and a command substitution does not inherit it.
	{"errexit and a failing && list at the end of a body", `set -e; if true; then false && true; fi; echo if $?; for i in 1; do false && true; done; { false && true; }; case a in a) false && true;; esac; echo case $?; while true; do false && true; break; done; echo ok; f() { false && true; }; f; echo not-reached`,
		"if 1\ncase 1\nok\n", 1, ""},
	{"errexit not inherited by $(...)", `set -e; x=$(false; echo hi); echo "x=$x"; echo $(false) a; shopt -s inherit_errexit; echo "[$(false; echo no2)]"; shopt -u inherit_errexit; y=$(set -e; false; echo no); echo not-reached`,
		"x=hi\na\n[]\n", 1, ""},
	{"errexit and ERR trap skip compound commands", `set -e; trap 'echo ERR' ERR; if true; then false && true; fi; { false && true; }; echo alive; ( false && true ); echo not-reached`,
		"alive\nERR\n", 1, ""},
	{"errexit on a compound command's failed redirection", "set -e\n{ echo in; } > /no/such/dir/f\necho not-reached", "", 1, "No such file"},
	{"time reports on stderr", `time true; time { echo in; }`, "in\n", 0, "real"},
	// An alias whose text is not a list of words (it failed to define);
	// within its own text it is not expanded again.
	{"alias not expanded in its own text", "shopt -s expand_aliases\nalias p='p | cat'\np\necho s=$?\nalias q='echo a; q'\nq\necho s=$?", "s=0\na\ns=127\n", 0, "q: command not found"},
	{"alias with operators", "shopt -s expand_aliases\nalias p='echo 1 | cat'\nalias l='echo a && echo b || echo c; echo d'\nalias half='echo x |'\np\nl\nhalf cat\nalias p l half\nx() { p; }; x\nalias pp='echo \"$1\" | cat'\nset -- arg; pp more",
		"1\na\nb\nd\nx\nalias p='echo 1 | cat'\nalias l='echo a && echo b || echo c; echo d'\nalias half='echo x |'\n1\n", 1, "more"},
	{"SECONDS", `[[ $SECONDS =~ ^[0-9]+$ ]] && echo num; x=$(echo $SECONDS); echo ${x:+set}`, "num\nset\n", 0, ""},
	// bash runs the command lines before the one with a syntax error.
	{"syntax error after runnable lines", "echo a; echo b\necho c\nif then\necho d", "a\nb\nc\n", 2, "syntax error"},
	{"syntax error on a line with commands", "echo a\necho b; if then\necho c", "a\n", 2, "syntax error"},
	{"syntax error at the end of file", "f() {\n echo in f\n}\nf\ncat <<EOF\nhd\nEOF\n# comment\necho \"unterminated\n", "in f\nhd\n", 2, ""},
	{"syntax error after a multi-line command", "for x in 1; do\necho $x\ndone; echo same-line; (\necho z", "", 2, ""},
	{"exit before a syntax error", "echo a\nexit 3\nif then", "a\n", 3, ""},
}

func TestFidelity(t *testing.T) {
	for _, c := range fidelityCases {
		t.Run(c.name, func(t *testing.T) {
			ts := newTestShell(t, nil)
			out, errOut, code, err := ts.run(t, c.script)
			if err != nil {
				t.Fatalf("Run error: %v (stderr %q)", err, errOut)
			}
			if out != c.stdout || code != c.code {
				t.Errorf("script %q:\n got stdout %q, status %d\nwant stdout %q, status %d\nstderr: %q", c.script, out, code, c.stdout, c.code, errOut)
			}
			if c.wantErr != "" && !contains(errOut, c.wantErr) {
				t.Errorf("stderr %q does not contain %q", errOut, c.wantErr)
			}
			// The session's state must stay encodable (shell/wire
			// refuses a variable whose name is not valid).
			st, err := ts.Snapshot()
			if err != nil {
				t.Fatal(err)
			}
			for _, v := range st.Vars {
				if !syntax.ValidName(v.Name) {
					t.Errorf("state holds variable %q", v.Name)
				}
			}
		})
	}
}

// TestFidelityCasesAgainstBash checks the expectations of fidelityCases
// against the bash named by WASMBOX_BASH (skipped when it is not set).
func TestFidelityCasesAgainstBash(t *testing.T) {
	bash := os.Getenv("WASMBOX_BASH")
	if bash == "" {
		t.Skip("WASMBOX_BASH is not set")
	}
	for _, c := range fidelityCases {
		t.Run(c.name, func(t *testing.T) {
			cmd := exec.Command(bash, "-c", c.script)
			cmd.Dir = t.TempDir()
			cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=/home/user", "USER=user", "LANG=C.UTF-8"}
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			code := 0
			if err := cmd.Run(); err != nil {
				var ee *exec.ExitError
				if !errors.As(err, &ee) {
					t.Fatal(err)
				}
				code = ee.ExitCode()
			}
			if stdout.String() != c.stdout || code != c.code {
				t.Errorf("bash gives stdout %q, status %d; the case wants %q, %d", stdout.String(), code, c.stdout, c.code)
			}
			if c.wantErr != "" && !contains(stderr.String(), c.wantErr) {
				t.Errorf("bash's stderr %q does not contain %q", stderr.String(), c.wantErr)
			}
		})
	}
}
