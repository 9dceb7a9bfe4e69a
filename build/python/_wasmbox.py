"""wasmbox: the command line of python3 in the sandbox.

python.wasm initializes the interpreter once (imports this module and the
modules it imports) and every run starts from a snapshot of that state:
main() is called with the run's argv and environment and does what
CPython's command line does. Supported: -c CMD, -m MOD, a script path, a
directory or zip with __main__.py, a program on stdin ('-' or nothing),
and the options -b -B -d -E -I -O -q -s -S -u -v -x -W ARG -X ARG -V -h.
Not supported: the interactive prompt (-i, or a terminal on stdin: stdin is
run as a program), -OO's effect on modules already loaded, threads and
sockets (WASI has neither). Hash randomization is fixed by the snapshot (as
with PYTHONHASHSEED set); the random module is reseeded on every run.
"""
import sys
import os
import io
import atexit
import types
import warnings
import runpy
import site

# The modules most programs import, loaded once into the snapshot.
import re, json, csv, collections, functools, itertools, traceback, linecache  # noqa: E401,F401
import datetime, pathlib, argparse, subprocess, tempfile, random, shutil, glob  # noqa: E401,F401
import textwrap, string, struct, math, hashlib, base64, copy, enum, dataclasses, typing  # noqa: E401,F401

VERSION = "Python %d.%d.%d" % sys.version_info[:3]

USAGE = """usage: python3 [option] ... [-c cmd | -m mod | file | -] [arg] ...
Options (wasmbox):
-B     : don't write .pyc files
-c cmd : program passed in as string (terminates option list)
-E     : ignore PYTHON* environment variables (such as PYTHONPATH)
-h     : print this help message and exit (also -? or --help)
-I     : isolate Python from the user's environment (implies -E and -s)
-m mod : run library module as a script (terminates option list)
-q     : don't print version and copyright messages on interactive startup
-s     : don't add user site directory to sys.path
-u     : force the stdout and stderr streams to be unbuffered
-V     : print the Python version number and exit (also --version)
-W arg : warning control
-x     : skip first line of source
-X opt : set implementation-specific option (ignored)
file   : program read from script file
-      : program read from stdin (default)
arg ...: arguments passed to program in sys.argv[1:]
"""


class _Usage(Exception):
    pass


def _parse(args):
    opts = {"flags": set(), "W": [], "mode": None, "target": None}
    while args:
        a = args[0]
        if a == "--":
            args.pop(0)
            break
        if a in ("--version",):
            opts["flags"].add("V")
            args.pop(0)
            continue
        if a in ("--help", "-?"):
            opts["flags"].add("h")
            args.pop(0)
            continue
        if not a.startswith("-") or a == "-" or a.startswith("--"):
            if a.startswith("--"):
                raise _Usage("unknown option " + a)
            break
        args.pop(0)
        i = 1
        while i < len(a):
            ch = a[i]
            if ch in "cmWX":
                val = a[i + 1:]
                if not val:
                    if not args:
                        raise _Usage("Argument expected for the -%s option" % ch)
                    val = args.pop(0)
                if ch in "cm":
                    opts["mode"], opts["target"] = ch, val
                    return opts, args
                opts[ch if ch == "W" else "X_"] = opts.get(ch if ch == "W" else "X_", []) + [val]
                break
            if ch not in "bBdEhIOqsSuvVxi":
                raise _Usage("Unknown option: -" + ch)
            opts["flags"].add(ch)
            i += 1
    return opts, args


def _streams(unbuffered):
    def out(fd, errors, line):
        buf = io.BufferedWriter(io.FileIO(fd, "w", closefd=False))
        return io.TextIOWrapper(buf, "utf-8", errors, line_buffering=line,
                                write_through=unbuffered)
    sys.stdin = sys.__stdin__ = io.TextIOWrapper(
        io.BufferedReader(io.FileIO(0, "r", closefd=False)), "utf-8", "strict")
    sys.stdout = sys.__stdout__ = out(1, "strict", os.isatty(1))
    sys.stderr = sys.__stderr__ = out(2, "backslashreplace", True)


def _environ(env):
    os.environ.clear()
    for kv in env:
        k, sep, v = kv.partition("=")
        if sep and k:
            os.environ[k] = v
    pwd = os.environ.get("PWD")
    if pwd:
        try:
            os.chdir(pwd)
        except OSError:
            pass
    try:
        import time
        time.tzset()
    except Exception:
        pass


def _paths(opts):
    flags = opts["flags"]
    ignore_env = "E" in flags or "I" in flags
    if not ignore_env and os.environ.get("PYTHONPATH"):
        extra = [p for p in os.environ["PYTHONPATH"].split(os.pathsep) if p]
        sys.path[0:0] = extra
    if "S" not in flags:
        dirs = list(site.getsitepackages())
        if "s" not in flags and "I" not in flags and not (not ignore_env and os.environ.get("PYTHONNOUSERSITE")):
            site.USER_BASE = site.USER_SITE = None
            site.ENABLE_USER_SITE = True
            dirs.insert(0, site.getusersitepackages())
        for d in dirs:
            if d not in sys.path and os.path.isdir(d):
                site.addsitedir(d)
    if "B" in flags or (not ignore_env and os.environ.get("PYTHONDONTWRITEBYTECODE")):
        sys.dont_write_bytecode = True


def _new_main():
    m = types.ModuleType("__main__")
    m.__dict__["__builtins__"] = __builtins__
    sys.modules["__main__"] = m
    return m


def _strip_own_frames(exc):
    tb = exc.__traceback__
    while tb is not None and tb.tb_frame.f_code.co_filename in (__file__, runpy.__file__):
        tb = tb.tb_next
    return exc.with_traceback(tb)


def _exit_status(e):
    code = e.code
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    try:
        sys.stderr.write(str(code) + "\n")
    except Exception:
        pass
    return 1


def _run(argv, opts, args):
    flags = opts["flags"]
    safe = "I" in flags or "P" in flags or (not ("E" in flags) and os.environ.get("PYTHONSAFEPATH"))
    for w in opts.get("W", []):
        sys.warnoptions.append(w)
    if opts.get("W"):
        warnings._processoptions(opts["W"])
    mode, target = opts["mode"], opts["target"]
    if mode == "c":
        sys.argv = ["-c"] + args
        if not safe:
            sys.path.insert(0, "")
        main = _new_main()
        code = compile(target + "\n", "<string>", "exec")
        exec(code, main.__dict__)
        return
    if mode == "m":
        sys.argv = [target] + args
        if not safe:
            sys.path.insert(0, os.getcwd())
        _new_main()
        runpy._run_module_as_main(target, alter_argv=True)
        return
    script = args[0] if args else "-"
    if script == "-":
        sys.argv = [""] + args[1:] if args else [""]
        if not safe:
            sys.path.insert(0, "")
        main = _new_main()
        src = sys.stdin.read()
        exec(compile(src, "<stdin>", "exec"), main.__dict__)
        return
    sys.argv = list(args)
    try:
        st = os.stat(script)
    except OSError as e:
        sys.stderr.write("%s: can't open file %r: [Errno %d] %s\n" % (
            os.path.basename(argv[0]) or "python3", os.path.abspath(script), e.errno, e.strerror))
        raise SystemExit(2)
    import stat as _stat
    if _stat.S_ISDIR(st.st_mode) or not script.endswith(".py") and _is_zip(script):
        if not safe:
            sys.path.insert(0, script)
        _new_main()
        runpy.run_path(script, run_name="__main__")
        return
    if not safe:
        sys.path.insert(0, os.path.dirname(os.path.realpath(script)))
    with open(script, "rb") as f:
        src = f.read()
    if "x" in flags:
        nl = src.find(b"\n")
        src = b"\n" + (src[nl + 1:] if nl >= 0 else b"")
    main = _new_main()
    main.__dict__.update(__file__=script, __cached__=None)
    exec(compile(src, script, "exec"), main.__dict__)


def _is_zip(path):
    import zipfile
    try:
        return zipfile.is_zipfile(path)
    except OSError:
        return False


def main(argv, env):
    """Runs one python3 command line; returns its exit status."""
    _environ(env)
    try:
        opts, args = _parse(list(argv[1:]))
    except _Usage as e:
        _streams(False)
        sys.stderr.write("%s\nusage: python3 [option] ... [-c cmd | -m mod | file | -] [arg] ...\n"
                         "Try `python -h' for more information.\n" % e)
        sys.stderr.flush()
        return 2
    flags = opts["flags"]
    ignore_env = "E" in flags or "I" in flags
    _streams("u" in flags or (not ignore_env and bool(os.environ.get("PYTHONUNBUFFERED"))))
    sys.orig_argv = list(argv)
    sys.executable = "/usr/bin/python3"
    random.seed()
    status = 0
    try:
        if "h" in flags:
            sys.stdout.write(USAGE)
        elif "V" in flags:
            sys.stdout.write(VERSION + "\n")
        else:
            _paths(opts)
            _run(argv, opts, args)
    except SystemExit as e:
        status = _exit_status(e)
    except BaseException as e:
        e = _strip_own_frames(e)
        try:
            sys.excepthook(type(e), e, e.__traceback__)
        except Exception:
            pass
        status = 1
    try:
        atexit._run_exitfuncs()
    except SystemExit as e:
        status = _exit_status(e)
    except BaseException:
        pass
    for s in (sys.stdout, sys.stderr):
        try:
            s.flush()
        except Exception:
            if status == 0:
                status = 120
    return status
