#!/usr/bin/env python3
"""build/bash/pgo/train.py BASH REPO OILS: the training workload of
build/bash/pgo.sh, run by the profile-collecting native bash.

1. Every case of the Oils shell spec files (OILS/spec/*.test.sh: the
   broad workload, every part of the language that agents write), each
   run as run_oils.py runs it on the host (script on stdin, its
   environment, a fresh working directory, a timeout), with $SH and
   `bash` on PATH being the instrumented shell.
2. The scripts of the bash rows of `wasmbox bench` (REPO/bench/bash.go),
   once each.

The outputs are thrown away: only the profile counts."""
import os, re, shutil, signal, subprocess, sys, tempfile

bash, repo, oils = sys.argv[1], sys.argv[2], sys.argv[3]
bash = os.path.abspath(bash)
work = tempfile.mkdtemp(prefix='bash-pgo-train-')
bindir = os.path.join(work, 'bin')
os.mkdir(bindir)
os.symlink(bash, os.path.join(bindir, 'bash'))


def run(argv, env, cwd, stdin=None, timeout=10):
    env = dict(env, LLVM_PROFILE_FILE=os.environ['LLVM_PROFILE_FILE'])
    p = subprocess.Popen(argv, env=env, cwd=cwd, start_new_session=True,
                         stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        p.communicate(input=stdin, timeout=timeout)
    except subprocess.TimeoutExpired:
        pass
    try:
        os.killpg(p.pid, signal.SIGKILL)
    except OSError:
        pass
    p.wait()


def cases(path):
    code, inside = [], False
    with open(path, 'rb') as f:
        for line in f:
            if line.startswith(b'#### '):
                if inside and code:
                    yield b''.join(code)
                code, inside = [], True
            elif inside and line.startswith(b'## '):
                if code:
                    yield b''.join(code)
                code, inside = [], False
            elif inside:
                code.append(line)
    if inside and code:
        yield b''.join(code)


spec = os.path.join(oils, 'spec')
n = 0
for name in sorted(os.listdir(spec)):
    if not name.endswith('.test.sh'):
        continue
    for code in cases(os.path.join(spec, name)):
        tmp = os.path.join(work, 'case')
        shutil.rmtree(tmp, ignore_errors=True)
        os.makedirs(os.path.join(tmp, '_tmp'))
        env = {'PATH': '%s:%s/bin:/usr/local/bin:/usr/bin:/bin' % (bindir, spec),
               'LC_ALL': 'C.UTF-8', 'LANG': 'C', 'HOME': '/home/user', 'USER': 'user',
               'LOGNAME': 'user', 'TERM': 'dumb', 'TMPDIR': '/tmp', 'REPO_ROOT': oils,
               'TMP': tmp, 'SH': bash}
        run([bash], env, tmp, stdin=code)
        n += 1
print('pgo-train: %d Oils cases' % n, file=sys.stderr)

src = open(os.path.join(repo, 'bench', 'bash.go')).read()
table = src[src.index('var bashCases'):]
table = table[:table.index('\n}\n')]
scripts = re.findall(r'`([^`]*)`', table)
infile = os.path.join(work, 'in.txt')
with open(infile, 'w') as f:
    for i in range(40000):
        f.write('line %d of the input, word%d\n' % (i, i % 97))
env = {'PATH': '%s:/usr/bin:/bin' % bindir, 'LC_ALL': 'C', 'HOME': work}
for s in scripts:
    run([bash, '-c', s.replace('IN', infile)], env, work, timeout=120)
print('pgo-train: %d bench scripts' % len(scripts), file=sys.stderr)
shutil.rmtree(work, ignore_errors=True)
