"""wasmbox: the command line of python3 in the sandbox.

python.wasm initializes the interpreter once (imports this module and the
modules it imports) and every run starts from a snapshot of that state:
main() is called with the run's argv and environment and does what
CPython's command line does. Supported: -c CMD, -m MOD, a script path, a
directory or zip with __main__.py, a program on stdin ('-' or nothing),
and the options -b -B -d -E -I -O -P -q -s -S -u -v -x -W ARG -X ARG -V -h
(-b -d -O -q -v -X are accepted and have no effect).
Not supported: the interactive prompt (-i, or a terminal on stdin: stdin is
run as a program), -OO's effect on modules already loaded, threads,
servers and protocols other than HTTP/1.1 (the sandbox's sockets are
HTTP/1.1 clients of connections the host opens, see _wasmbox_net). Hash
randomization is fixed by the snapshot (as with PYTHONHASHSEED set); the random module is reseeded on every run.
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

# The network: WASI has no sockets; the host opens connections for the
# sandbox (runtime.NetABI, --allow-net). _wasmbox_net puts a TCP client
# socket over it in place of socket.socket and answers getaddrinfo itself
# (names are resolved and checked by the host); ssl (build/python/lib/ssl.py)
# has the host do TLS. Without --allow-net every connect is refused with
# the host's one-line message.
import _wasmbox_net
_wasmbox_net.install()

# pip, offline: ensurepip's bundled wheel is importable (last on sys.path,
# so that a pip installed in site-packages comes first), and its zip
# directory is read once, into the snapshot.
_PIP_WHEELS = sorted(glob.glob(os.path.join(os.path.dirname(os.__file__), "ensurepip", "_bundled", "pip-*.whl")))
for _w in _PIP_WHEELS:
    try:
        import zipimport
        sys.path_importer_cache[_w] = zipimport.zipimporter(_w)
    except Exception:
        pass

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
            if ch not in "bBdEhIOPqsSuvVxi":
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
            # site has no user base on WASI: Debian's, from this run's $HOME.
            site.USER_BASE = os.path.expanduser("~/.local")
            site.USER_SITE = os.path.join(site.USER_BASE, "lib", "python%d.%d" % sys.version_info[:2], "site-packages")
            site.ENABLE_USER_SITE = True
            dirs.insert(0, site.USER_SITE)
        for d in dirs:
            if d not in sys.path and os.path.isdir(d):
                site.addsitedir(d)
    for w in _PIP_WHEELS:
        if w not in sys.path:
            sys.path.append(w)
    if "B" in flags or (not ignore_env and os.environ.get("PYTHONDONTWRITEBYTECODE")):
        sys.dont_write_bytecode = True


def _new_main():
    m = types.ModuleType("__main__")
    m.__dict__["__builtins__"] = __builtins__
    sys.modules["__main__"] = m
    return m


def _strip_own_frames(exc):
    tb = exc.__traceback__
    own = (main.__code__.co_filename, runpy._run_module_as_main.__code__.co_filename)
    while tb is not None and tb.tb_frame.f_code.co_filename in own:
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
        sys.argv = list(args) if args else [""]
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
    if "_umask_value" in globals():
        _umask_value[0] = 0o022
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
            if s is not None and not s.closed:
                s.flush()
        except Exception:
            if status == 0:
                status = 120
    return status


# --- processes: subprocess, os.system, os.popen through the host -----------
#
# WASI has no processes. The wasmbox runtime's process ABI
# (runtime.ProcessABI, module _wasmbox_host) starts a child command in the
# sandbox (resolved, allowed and limited like any command, under the same
# deadline), with pipes of the host as its standard streams; its handle is a
# descriptor that becomes readable when the child ends and then reads as
# its exit status and cause. subprocess.Popen is patched to use it; the
# child's pid is its handle. A child killed by proc_kill reports -signal as
# returncode, like a signalled process.

def _install_processes():
    import errno
    import shutil
    import struct
    import time
    try:
        import _wasmbox_host as host
    except ImportError:
        return
    sp = subprocess

    def pipe():
        r, w = host.pipe()
        os.set_blocking(r, True)
        os.set_blocking(w, True)
        return r, w

    os.pipe = pipe

    def spawn(argv, env=None, cwd=None, stdin=0, stdout=1, stderr=2):
        req = {"argv": list(argv), "stdin": stdin, "stdout": stdout, "stderr": stderr}
        if env is not None:
            req["env"] = ["%s=%s" % (os.fsdecode(k), os.fsdecode(v)) for k, v in env.items()]
        if cwd is not None:
            req["dir"] = os.path.abspath(os.fsdecode(cwd))
        return host.spawn(json.dumps(req).encode())

    def status(handle, block):
        os.set_blocking(handle, block)
        try:
            data = os.read(handle, 8)
        except BlockingIOError:
            return None
        os.close(handle)
        code, cause = struct.unpack("<II", data[:8])
        if cause == 7 and code > 128:
            return -(code - 128)
        return code

    def execute_child(self, args, executable, preexec_fn, close_fds, pass_fds, cwd, env,
                      startupinfo, creationflags, shell, p2cread, p2cwrite, c2pread, c2pwrite,
                      errread, errwrite, *rest):
        if isinstance(args, (str, bytes)):
            args = [args]
        elif isinstance(args, os.PathLike):
            if shell:
                raise TypeError("path-like args is not allowed when shell is true")
            args = [args]
        else:
            args = list(args)
        args = [os.fsdecode(a) for a in args]
        if shell:
            args = ["/bin/sh", "-c"] + args
            if executable:
                args[0] = os.fsdecode(executable)
        elif executable:
            args[0] = os.fsdecode(executable)
        exe = args[0]
        path = (env if env is not None else os.environ).get("PATH", os.defpath)
        if "/" not in exe and shutil.which(exe, path=path) is None:
            raise FileNotFoundError(errno.ENOENT, "No such file or directory", exe)
        if "/" in exe and not os.path.exists(os.path.join(os.fsdecode(cwd) if cwd else "", exe)):
            raise FileNotFoundError(errno.ENOENT, "No such file or directory", exe)
        try:
            handle = spawn(args, env, cwd,
                           p2cread if p2cread != -1 else 0,
                           c2pwrite if c2pwrite != -1 else 1,
                           errwrite if errwrite != -1 else 2)
        finally:
            for fd in (p2cread, c2pwrite, errwrite):
                if fd != -1 and fd not in (p2cwrite, c2pread, errread) and fd != getattr(self, "_devnull", None):
                    try:
                        os.close(fd)
                    except OSError:
                        pass
            if getattr(self, "_devnull", None) is not None:
                os.close(self._devnull)
                self._devnull = None
        self.pid = handle
        self._child_created = True

    def internal_poll(self, _deadstate=None, _waitpid=None, _WNOHANG=None, _ECHILD=None):
        if self.returncode is None:
            code = status(self.pid, False)
            if code is not None:
                self.returncode = code
        return self.returncode

    def wait_(self, timeout):
        if self.returncode is not None:
            return self.returncode
        if timeout is None:
            self.returncode = status(self.pid, True)
            return self.returncode
        end = time.monotonic() + timeout
        delay = 0.0005
        while True:
            code = status(self.pid, False)
            if code is not None:
                self.returncode = code
                return code
            left = end - time.monotonic()
            if left <= 0:
                raise sp.TimeoutExpired(self.args, timeout)
            delay = min(delay * 2, left, 0.05)
            time.sleep(delay)

    def send_signal(self, sig):
        if self.returncode is None:
            try:
                host.kill(self.pid, int(sig))
            except OSError:
                pass

    def communicate_(self, input, endtime, orig_timeout):
        # Without select: non-blocking descriptors, polled.
        if self.stdin and not self._communication_started:
            try:
                self.stdin.flush()
            except BrokenPipeError:
                pass
            if not input:
                try:
                    self.stdin.close()
                except BrokenPipeError:
                    pass
        if not hasattr(self, "_fileobj2output"):
            self._fileobj2output = {}
            if self.stdout:
                self._fileobj2output[self.stdout] = []
            if self.stderr:
                self._fileobj2output[self.stderr] = []
        stdout = self._fileobj2output.get(self.stdout)
        stderr = self._fileobj2output.get(self.stderr)
        self._save_input(input)
        if self._input:
            input_view = memoryview(self._input)
        readers = [f for f in (self.stdout, self.stderr) if f and not f.closed]
        writer = self.stdin if (self.stdin and not self.stdin.closed and self._input) else None
        for f in readers + ([writer] if writer else []):
            os.set_blocking(f.fileno(), False)
        delay = 0.0002
        while readers or writer:
            progress = False
            if writer:
                chunk = input_view[self._input_offset:self._input_offset + sp._PIPE_BUF]
                try:
                    n = os.write(writer.fileno(), chunk)
                    self._input_offset += n
                    progress = n > 0
                except BlockingIOError:
                    pass
                except BrokenPipeError:
                    self._input_offset = len(self._input)
                if self._input_offset >= len(self._input):
                    writer.close()
                    writer = None
            for f in list(readers):
                try:
                    data = os.read(f.fileno(), 32768)
                except BlockingIOError:
                    continue
                progress = True
                if not data:
                    readers.remove(f)
                    f.close()
                else:
                    self._fileobj2output[f].append(data)
            if progress:
                delay = 0.0002
                continue
            if endtime is not None and time.monotonic() > endtime:
                raise sp.TimeoutExpired(self.args, orig_timeout)
            time.sleep(delay)
            delay = min(delay * 2, 0.01)
        self.wait(timeout=self._remaining_time(endtime))
        if stdout is not None:
            stdout = b"".join(stdout)
        if stderr is not None:
            stderr = b"".join(stderr)
        if self.text_mode:
            if stdout is not None:
                stdout = self._translate_newlines(stdout, self.stdout.encoding, self.stdout.errors)
            if stderr is not None:
                stderr = self._translate_newlines(stderr, self.stderr.encoding, self.stderr.errors)
        return (stdout, stderr)

    sp._can_fork_exec = True
    sp.Popen._execute_child = execute_child
    sp.Popen._internal_poll = internal_poll
    sp.Popen._wait = wait_
    sp.Popen.send_signal = send_signal
    sp.Popen._communicate = communicate_

    def system(command):
        """Runs command with /bin/sh -c; returns its wait status."""
        for s in (sys.stdout, sys.stderr):
            try:
                s.flush()
            except Exception:
                pass
        code = status(spawn(["/bin/sh", "-c", os.fsdecode(command)]), True)
        return (-code) & 0x7F if code < 0 else (code & 0xFF) << 8

    os.system = system


_install_processes()


# WASI has no umask: os.umask keeps the value (0o022 at every start) and
# returns the previous one, so that programs that read it (pip) work; files
# are created with the modes the sandbox's filesystem gives them.
if not hasattr(os, "umask"):
    _umask_value = [0o022]

    def umask(mask):
        old, _umask_value[0] = _umask_value[0], int(mask) & 0o777
        return old

    os.umask = umask
