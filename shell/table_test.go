package shell

import (
	"testing"
)

// scriptCase is one script with its expected stdout and exit status;
// stderr is checked when wantErr is not empty (as a substring).
type scriptCase struct {
	name    string
	script  string
	stdout  string
	code    int
	wantErr string
}

// bashCases hold outputs of GNU bash 5 for the same scripts (the
// commands cat, seq, wc, sort, head come from the test executor).
var bashCases = []scriptCase{
	{"echo", `echo hello world`, "hello world\n", 0, ""},
	{"redirect errors", `cat < /nonexistent; echo x > /nodir/y; echo $?`, "1\n", 0, "bash: line 1: /nonexistent: No such file or directory\nbash: line 1: /nodir/y: No such file or directory\n"},
	{"positional past 9", `set -- a b c d e f g h i j k; echo "${10} ${11} [${12}] ${1}"; f() { echo "${10}"; }; f 1 2 3 4 5 6 7 8 9 ten`, "j k [] a\nten\n", 0, ""},
	{"echo -n", `echo -n a; echo b`, "ab\n", 0, ""},
	{"echo -ne", `echo -ne 'a\tb\n'`, "a\tb\n", 0, ""},
	{"echo -en combined", `echo -en 'x\ny'; echo`, "x\ny\n", 0, ""},
	{"echo -e stop", `echo -e 'ab\cde'; echo z`, "abz\n", 0, ""},
	{"echo not option", `echo -nx hi`, "-nx hi\n", 0, ""},
	{"echo -e octal", `echo -e '\0101\x42'`, "AB\n", 0, ""},
	{"echo percent", `echo -e '100%'`, "100%\n", 0, ""},
	{"pipeline", `seq 5 | sort | wc`, "5\n", 0, ""},
	{"pipe 2>&1", `{ echo out; echo err >&2; } 2>&1 | cat`, "out\nerr\n", 0, ""},
	{"pipe |&", `{ echo out; echo err >&2; } |& wc`, "2\n", 0, ""},
	{"pipe quoting", `echo "$(echo 'a|b' "c'd" | cat)"`, "a|b c'd\n", 0, ""},
	{"pipe heredoc", "cat <<EOF | cat\nhi $HOME\nEOF", "hi /home/user\n", 0, ""},
	{"pipe vars", `x=1; echo $x | { read y; echo "$x$y"; }; x=3 | cat; echo $x`, "11\n1\n", 0, ""},
	{"pipe function", `up() { while read l; do echo "[$l]"; done; }; seq 2 | up | cat`, "[1]\n[2]\n", 0, ""},
	{"xtrace", `set -x; echo hi`, "hi\n", 0, "+ echo hi"},
	{"pipe status", `false | true; echo $?`, "0\n", 0, ""},
	{"pipefail", `set -o pipefail; false | true; echo $?`, "1\n", 0, ""},
	{"redirect", `echo hi > f; echo there >> f; cat f`, "hi\nthere\n", 0, ""},
	{"redirect in", `printf 'a\nb\n' > f; wc < f`, "2\n", 0, ""},
	{"stderr redirect", `echo err >&2; echo out`, "out\n", 0, "err"},
	{"both redirect", `{ echo o; echo e >&2; } &> both; cat both`, "o\ne\n", 0, ""},
	{"devnull", `echo gone > /dev/null; echo kept`, "kept\n", 0, ""},
	{"heredoc", "cat <<EOF\nhello $USER\nEOF", "hello user\n", 0, ""},
	{"heredoc quoted", "cat <<'EOF'\nhello $USER\nEOF", "hello $USER\n", 0, ""},
	{"heredoc dash", "cat <<-EOF\n\tindented\n\tEOF", "indented\n", 0, ""},
	{"herestring", `wc <<< "one"`, "1\n", 0, ""},
	{"function", `f() { echo "args: $# $1 $2"; return 3; }; f a b; echo $?`, "args: 2 a b\n3\n", 0, ""},
	{"local", `x=g; f() { local x=l; echo $x; }; f; echo $x`, "l\ng\n", 0, ""},
	{"recursion", `fact() { if (( $1 <= 1 )); then echo 1; else echo $(( $1 * $(fact $(( $1 - 1 ))) )); fi; }; fact 10`, "3628800\n", 0, ""},
	{"arrays", `a=(x y z); echo ${#a[@]} ${a[1]} "${a[@]:1}"; a+=(w); echo ${a[3]}`, "3 y y z\nw\n", 0, ""},
	{"assoc", `declare -A m=([k]=v); m[x]=y; echo ${m[k]}${m[x]} ${!m[@]}`, "vy k x\n", 0, ""},
	{"arith", `i=5; (( i += 3 )); echo $(( i * 2 )) $(( 7 / 2 )) $(( 2 ** 10 )) $(( 7 % 3 ))`, "16 3 1024 1\n", 0, ""},
	{"arith cond", `(( 0 )); echo $?; (( 1 )); echo $?`, "1\n0\n", 0, ""},
	{"param default", `unset u; echo ${u:-def} ${u:=set} $u`, "def set set\n", 0, ""},
	{"param strip", `p=/a/b/c.txt; echo ${p##*/} ${p%.*} ${p#/} ${p%%/*}x`, "c.txt /a/b/c a/b/c.txt x\n", 0, ""},
	{"param replace", `s=hello; echo ${s/l/L} ${s//l/L} ${s^^} ${#s} ${s:1:3}`, "heLlo heLLo HELLO 5 ell\n", 0, ""},
	{"set -e", `set -e; echo a; false; echo b`, "a\n", 1, ""},
	{"set -e cond", `set -e; if false; then :; fi; false || true; echo ok`, "ok\n", 0, ""},
	{"set -Eeuo pipefail", `set -Eeuo pipefail; echo $-; false | true; echo no`, "eu\n", 1, ""},
	{"set -u", `set -u; echo $nope; echo after`, "", 1, "nope"},
	{"trap exit", `trap 'echo bye' EXIT; echo hi`, "hi\nbye\n", 0, ""},
	{"trap exit on exit", `trap 'echo bye $?' EXIT; exit 3`, "bye 3\n", 3, ""},
	{"trap signals ignored", `trap 'echo x' INT TERM; trap 'echo done' EXIT INT; echo hi`, "hi\ndone\n", 0, ""},
	{"subshell", `x=1; (x=2; echo $x); echo $x`, "2\n1\n", 0, ""},
	{"subshell exit", `(exit 4); echo $?`, "4\n", 0, ""},
	{"cmdsubst", `x=$(echo a; echo b); echo "$x"`, "a\nb\n", 0, ""},
	{"cmdsubst file", `echo content > f; echo "$(<f)"`, "content\n", 0, ""},
	{"nested cmdsubst", `echo $(echo $(echo $(echo deep)))`, "deep\n", 0, ""},
	{"while read", `printf '1\n2\n3\n' | while read n; do echo "n=$n"; done`, "n=1\nn=2\nn=3\n", 0, ""},
	{"for c style", `for ((i=0; i<3; i++)); do echo $i; done`, "0\n1\n2\n", 0, ""},
	{"for c style failing body", `s=0; for ((i=0; i<4; i++)); do (( s += i & 1 )); done; echo $s`, "2\n", 0, ""},
	{"until", `i=0; until (( i >= 2 )); do echo $i; (( i++ )); done`, "0\n1\n", 0, ""},
	{"case", `case foo.txt in *.md) echo md;; *.txt) echo txt;; esac`, "txt\n", 0, ""},
	{"brace", `echo {a,b}{1,2} {1..4}`, "a1 a2 b1 b2 1 2 3 4\n", 0, ""},
	{"glob", `touch a.txt b.txt c.md 2>/dev/null || { echo > a.txt; echo > b.txt; echo > c.md; }; echo *.txt`, "a.txt b.txt\n", 0, ""},
	{"test ops", `[ -d /tmp ] && [ ! -e /nope ] && [[ abc == a* ]] && echo yes`, "yes\n", 0, ""},
	{"test -r -w -x", `echo > f; chmod 2>/dev/null; [ -r f ] && [ -w f ] && [ ! -x f ] && echo ok`, "ok\n", 0, ""},
	{"test -O -G", `echo > mine; [ -O mine ] && [ -G mine ] && echo own; [ -O /etc/passwd ] || echo notown`, "own\nnotown\n", 0, ""},
	{"test -t", `[ -t 0 ] || [ -t 1 ] || echo notty`, "notty\n", 0, ""},
	{"printf basic", `printf '%s-%d\n' a 1 b 2`, "a-1\nb-2\n", 0, ""},
	{"printf precision", `printf '%.3f %5.1f|%-5s|%5s|%.2s\n' 3.14159 2.25 ab cd xyz`, "3.142   2.2|ab   |   cd|xy\n", 0, ""},
	{"printf hex", `printf '%x %X %o %#x %05d %+d\n' 255 255 8 255 42 7`, "ff FF 10 0xff 00042 +7\n", 0, ""},
	{"printf q", `printf '%q\n' 'a b' "it's" ''`, "a\\ b\nit\\'s\n''\n", 0, ""},
	{"printf b", `printf '%b|%s\n' 'a\tb' 'a\tb'`, "a\tb|a\\tb\n", 0, ""},
	{"printf char", `printf '%c%c\n' hello world`, "hw\n", 0, ""},
	{"printf charcode", `printf '%d\n' "'A"`, "65\n", 0, ""},
	{"printf -v", `printf -v v '%03d' 7; echo $v`, "007\n", 0, ""},
	{"printf invalid", `printf '%d\n' abc; echo $?`, "0\n1\n", 0, "invalid number"},
	{"printf star", `printf '%*d|%-*d|\n' 4 1 3 2`, "   1|2  |\n", 0, ""},
	{"printf g", `printf '%g %g %e\n' 0.1 1000000 12345.678`, "0.1 1e+06 1.234568e+04\n", 0, ""},
	{"read basic", `echo "a b c" | { read x y; echo "$x|$y"; }`, "a|b c\n", 0, ""},
	{"read -r", `echo 'a\tb' | { read -r x; echo "$x"; }`, "a\\tb\n", 0, ""},
	{"read backslash", `echo 'a\ b c' | { read x y; echo "$x|$y"; }`, "a b|c\n", 0, ""},
	{"read -n", `echo abcdef | { read -n 3 x; echo $x; }`, "abc\n", 0, ""},
	{"read -d", `printf 'a,b;c' | { read -d ';' x; echo "$x"; }`, "a,b\n", 0, ""},
	{"read -a", `echo "1 2 3" | { read -a arr; echo ${#arr[@]} ${arr[2]}; }`, "3 3\n", 0, ""},
	{"read IFS", `echo "a:b:c" | { IFS=: read x y z; echo "$x $y $z"; }`, "a b c\n", 0, ""},
	{"read eof", `printf 'partial' | { read x; echo "$? $x"; }`, "1 partial\n", 0, ""},
	{"read REPLY", `echo '  spaced  ' | { read; echo "[$REPLY]"; }`, "[  spaced  ]\n", 0, ""},
	{"read -N", `printf 'ab\ncd' | { read -N 4 x; printf '%q\n' "$x"; }`, "$'ab\\nc'\n", 0, ""},
	{"read -t timeout", `sleep 0.2 | { read -t 0.05 x; echo $?; }`, "142\n", 0, ""},
	{"read IFS= -r", `printf '  a\\b  \n' | { IFS= read -r l; echo "[$l]"; }`, "[  a\\b  ]\n", 0, ""},
	{"read default IFS", `printf '  a b  \n' | { read l; echo "[$l]"; }`, "[a b]\n", 0, ""},
	{"printf reuse", `printf '%d %d\n' 1 2 3`, "1 2\n3 0\n", 0, ""},
	{"read loop lines", `printf 'x y\nz w\n' | while read a b; do echo "$b$a"; done`, "yx\nwz\n", 0, ""},
	{"aliases", `alias hi='echo hello'; hi there`, "hello there\n", 0, ""},
	{"eval", `cmd='echo evaled $((1+2))'; eval "$cmd"`, "evaled 3\n", 0, ""},
	{"eval assign", `eval 'x=5'; echo $x`, "5\n", 0, ""},
	{"source", `echo 'sourced=yes; echo in source $1' > lib.sh; source ./lib.sh arg; echo $sourced`, "in source arg\nyes\n", 0, ""},
	{"dot", `echo 'v=1' > lib2.sh; . ./lib2.sh; echo $v`, "1\n", 0, ""},
	{"type", `f() { :; }; type f echo if; type -t cat`, "f is a function\necho is a shell builtin\nif is a shell keyword\nfile\n", 0, ""},
	{"command -v", `command -v echo cat nosuch; echo $?`, "echo\n/usr/bin/cat\n1\n", 0, ""},
	{"command skips func", `echo() { builtin echo "func $*"; }; echo a; command echo b`, "func a\nb\n", 0, ""},
	{"not found", `nosuchcmd; echo $?`, "127\n", 0, "nosuchcmd: command not found"},
	{"empty command", `""; echo $?`, "127\n", 0, "bash: line 1: : command not found"},
	{"empty command from a variable", `e=; "$e" arg; echo $?`, "127\n", 0, "bash: line 1: : command not found"},
	{"exit code", `exit 42`, "", 42, ""},
	{"syntax error", `if then fi`, "", 2, "syntax error"},
	{"unclosed quote", `echo "abc`, "", 2, "line 1"},
	{"umask", `umask; umask 077; umask; umask -S`, "0022\n0077\nu=rwx,g=,o=\n", 0, ""},
	{"kill -l", `kill -l 9; kill -0 $$ && echo alive`, "KILL\nalive\n", 0, ""},
	{"jobs", `jobs; echo $?`, "0\n", 0, ""},
	{"background wait", `{ echo bg; } & wait; echo fg`, "bg\nfg\n", 0, ""},
	{"pid", `echo $$ $PPID ${$} "$$"`, "2 1 2 2\n", 0, ""},
	{"ids", `echo $UID $EUID $GID $HOME`, "1000 1000 1000 /home/user\n", 0, ""},
	{"tilde", `echo ~ ~user ~root ~nobody/x`, "/home/user /home/user /root ~nobody/x\n", 0, ""},
	{"bash -c", `bash -c 'echo "in child $0 $1"; exit 3' name arg; echo $?`, "in child name arg\n3\n", 0, ""},
	{"sh -c env", `export EXP=1; LOCALV=2; sh -c 'echo "$EXP-$LOCALV"'`, "1-\n", 0, ""},
	{"script file", "printf '#!/bin/bash\\necho script $1\\n' > s.sh; chmod +x s.sh 2>/dev/null; bash s.sh a", "script a\n", 0, ""},
	{"bash stdin", `echo 'echo from stdin' | bash`, "from stdin\n", 0, ""},
	{"proc subst while", `while read l; do echo "got $l"; done < <(seq 2)`, "got 1\ngot 2\n", 0, ""},
	{"proc subst out", `f() { for a; do echo "$1" > "$a"; done; }; f x >(cat) >(wc); echo "s=$?"`, "x\n1\ns=0\n", 0, ""},
	{"proc subst out redirect", `{ echo a; echo b; } > >(wc); false > >(cat); echo "s=$?"`, "2\ns=1\n", 0, ""},
	{"noclobber", `set -o noclobber; echo a > nc; { echo b; } > nc; echo "s=$?"; echo c >| nc; echo d > /dev/null; cat nc; set +C; echo e > nc; cat nc`, "s=1\nc\ne\n", 0, "nc: cannot overwrite existing file"},
	{"set -C", `set -C; echo a > n2; echo b >> n2; echo c > n2 || echo refused; cat n2; [[ $- == *C* ]] && echo C`, "refused\na\nb\nC\n", 0, ""},
	{"proc subst out elsewhere refused", `for f in >(cat); do :; done`, "", 2, "not supported"},
	{"cd -", `cd /tmp; cd /; cd - ; pwd`, "/tmp\n/tmp\n", 0, ""},
	{"pushd", `pushd /tmp >/dev/null; popd >/dev/null; pwd`, "/home/user\n", 0, ""},
	{"getopts", `set -- -a -b val x; while getopts ab: o; do echo "$o ${OPTARG:-}"; done`, "a \nb val\n", 0, ""},
	{"shift", `set -- 1 2 3; shift; echo "$@"`, "2 3\n", 0, ""},
	{"mapfile", `printf 'a\nb\n' | { mapfile -t arr; echo ${#arr[@]} ${arr[1]}; }`, "2 b\n", 0, ""},
	{"shopt compat", `shopt -s inherit_errexit; shopt -s extglob; echo ok`, "ok\n", 0, ""},
	{"declare -p", `declare -i 2>/dev/null; x=1; declare -p x`, "declare -- x=\"1\"\n", 0, ""},
	{"ulimit", `ulimit -n`, "1024\n", 0, ""},
	{"unicode", `s='héllo'; echo ${#s} ${s^^}`, "5 HÉLLO\n", 0, ""},
	{"alias missing", `alias foo; echo "s=$?"; alias a=b; unalias a; alias a; echo "s=$?"; unalias zz; echo "s=$?"`, "s=1\ns=1\ns=1\n", 0, "alias: foo: not found"},
	{"unalias -a", `alias a=1 b=2; unalias -a; alias; echo "s=$?"`, "s=0\n", 0, ""},
	{"alias listing sorted", `alias b=2 a=1; alias`, "alias a='1'\nalias b='2'\n", 0, ""},
	{"PIPESTATUS", "true | false | true; echo ${PIPESTATUS[@]}; false; echo ${PIPESTATUS[@]} ${#PIPESTATUS[@]}\n" +
		"{ true | false; }; echo ${PIPESTATUS[@]}; (exit 3); echo ${PIPESTATUS[@]}\n" +
		"f() { return 3; }; true | f | { true | false; }; echo ${PIPESTATUS[@]}; ! true | false; echo ${PIPESTATUS[@]} $?\n" +
		"false | true; x=$(exit 2); echo ${PIPESTATUS[@]}; false | true; echo x | echo ${PIPESTATUS[@]}",
		"0 1 0\n1 1\n0 1\n3\n0 3 1\n0 1 0\n2\n1 0\n", 0, ""},
	{"assoc length", `declare -A m=([a]=1 [b]=2); echo ${#m[@]}; declare -A n; n=([x]=1 [y]=2); echo ${#n[@]}; n+=([z]=3 [x]=9); echo ${#n[@]} ${n[x]}; m[c]=3; echo ${#m[@]} ${#m[*]}; declare -A e; echo ${#e[@]}; unset m[a]; echo ${#m[@]}`,
		"2\n2\n3 9\n3 3\n0\n2\n", 0, ""},
	{"mapfile set -u", `set -u; mapfile -t a < <(printf "1\n2\n"); echo ${#a[@]}; readarray b <<< "x"; echo ${#b[@]}; mapfile c < /dev/null; echo ${#c[@]} "${c[@]}" ${c[0]-d}; declare -p c`,
		"2\n1\n0 d\ndeclare -a c=()\n", 0, ""},
	{"BASHPID", `a=$BASHPID; b=$(echo $BASHPID); [ "$a" = $$ ] && echo main; [ "$b" != "$a" ] && [ -n "$b" ] && echo sub; ( c=$BASHPID; [ $c = $BASHPID ] && [ $c != $a ] && [ $c != "$b" ] && echo own )`,
		"main\nsub\nown\n", 0, ""},
	{"fd n>file >&n", "echo a 5> f >&5; cat f", "a\n", 0, ""},
	{"fd {var}", "exec {fd}>g; echo hi >&$fd; echo $fd; exec {fd}>&-; cat g; echo x >&10; echo s=$?", "10\nhi\ns=1\n", 0, ""},
	{"fd exec dup and close", "exec 3>&1; echo x >&3; exec 3>&-; echo y >&3; echo s=$?", "x\ns=1\n", 0, ""},
	{"fd exec input", "printf 'l1\\nl2\\nl3\\n' > in; exec 4<in; read a <&4; read -u 4 b; echo \"$a|$b\"; exec 4<&-; read -u 4 c; echo s=$?", "l1|l2\ns=1\n", 0, ""},
	{"fd swap", "{ echo out; echo err >&2; } 3>&1 1>&2 2>&3 | cat; echo done", "err\ndone\n", 0, ""},
	{"fd function and subshell", "f() { echo in-f >&7; }; f 7>h; cat h; ( exec 6>sub; echo subshell >&6 ); cat sub; echo z >&6; echo s=$?", "in-f\nsubshell\ns=1\n", 0, ""},
	{"fd append and read loop", "exec 8>>app; echo one >&8; echo two >&8; exec 8>&-; cat app; printf 'a\\nb\\n' > in; while read -u 9 l; do echo \"[$l]\"; done 9<in", "one\ntwo\n[a]\n[b]\n", 0, ""},
	{"fd closed for one command", "exec 3>&1; echo z 3>&- >&3; echo s=$?; echo back >&3", "s=1\nback\n", 0, ""},
	{"fd read-write and group", "exec 5<>rw; echo rwdata >&5; exec 5>&-; cat rw; { echo grouped >&4; } 4>&1; echo to2 2>/dev/null >&3; echo s=$?", "rwdata\ngrouped\ns=1\n", 0, ""},
	{"fd dup survives close", "exec 3>dd; exec 4>&3; exec 3>&-; echo kept >&4; exec 4>&-; cat dd", "kept\n", 0, ""},
	{"fd heredoc on 3", "cat 3<<EOF <&3\nthree\nEOF\ncat <&3 3<<EOF\nno\nEOF\necho s=$?", "three\ns=1\n", 0, ""},
	{"proc subst in ${x:-}", "x=; cat ${x:-<(echo sub)}; cat \"${x:-<(echo sub)}\" 2>/dev/null; echo; y=$(cat ${x:-<(echo in-cmdsubst)}); echo $y; cat ${x:-${z:-<(echo nested)}}; x=set; echo ${x:-<(echo no)}", "sub\n\nin-cmdsubst\nnested\nset\n", 0, ""},
	{"coproc", "coproc cat; echo hi >&${COPROC[1]}; exec {COPROC[1]}>&-; read l <&${COPROC[0]}; echo $l; wait $COPROC_PID; echo w=$?", "hi\nw=0\n", 0, ""},
	{"coproc named", "coproc UP { while read x; do echo \"<$x>\"; done; }; echo a >&${UP[1]}; read r <&${UP[0]}; echo \"$r\"; echo b >&${UP[1]}; read r <&${UP[0]}; echo \"$r\"; exec {UP[1]}>&-; wait $UP_PID; echo s=$?", "<a>\n<b>\ns=0\n", 0, ""},
	{"coproc status", "coproc { echo x; exit 3; }; read v <&${COPROC[0]}; wait $COPROC_PID; echo \"$v $?\"", "x 3\n", 0, ""},
	{"fd inherited by child shells", "printf \"echo from-script >&3\\n\" > s.sh; bash s.sh 3>&1; bash -c \"echo child >&4; exec 4>&-; echo again >&4\" 4>out 2>/dev/null; echo s=$?; cat out; exec 5>&1; bash -c \"echo five >&5\"; echo ok >&5", "from-script\ns=1\nchild\nfive\nok\n", 0, ""},
	{"PWD and OLDPWD exported", "cd /tmp; cd /; env | sort | while read l; do case $l in PWD=*|OLDPWD=*) echo \"$l\";; esac; done; declare -p PWD OLDPWD", "OLDPWD=/tmp\nPWD=/\ndeclare -x PWD=\"/\"\ndeclare -x OLDPWD=\"/tmp\"\n", 0, ""},
	{"error lines", "true\ncat < /nope2 | cat\nx=$(cat < /nope3)\n{ echo a; } > /no/dir\necho x | { cat < /n5; } | cat\nnosuchcmd", "", 127, "bash: line 2: /nope2: No such file or directory\nbash: line 3: /nope3: No such file or directory\nbash: line 4: /no/dir: No such file or directory\nbash: line 5: /n5: No such file or directory\nbash: line 6: nosuchcmd: command not found\n"},
	{"$(( as a subshell", `x=$((echo sub; echo two)2>/dev/null); echo "$x"; echo $((1+2))`, "sub\ntwo\n3\n", 0, ""},
}

func TestScripts(t *testing.T) {
	for _, c := range bashCases {
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
		})
	}
}

func contains(s, sub string) bool { return len(sub) == 0 || indexOf(s, sub) >= 0 }

func indexOf(s, sub string) int {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return i
		}
	}
	return -1
}
