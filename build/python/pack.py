"""pack.py LIBDIR SYSCONFIGDATA OUT.zip: the standard library, precompiled,
with its sources.

Every module of LIBDIR (CPython's Lib/) is shipped as its source, X.py,
and its bytecode in the standard cache layout, __pycache__/X.cpython-311.pyc
(what the import system loads: the source is not compiled again), compiled
with optimization level 1 (asserts removed, docstrings kept) and an
unchecked-hash header (no source mtime, nothing to revalidate: the source
is not even read on import), with co_filename set to its path under
/usr/lib/python3.11, where the source is: tracebacks show every frame's
line (linecache reads it).
Other files (data the stdlib reads, ensurepip's wheels) are copied. Test
suites, IDLE, Tkinter and turtle demos are left out. The zip is
deterministic: sorted entries, fixed times, fixed modes.

Run it with the native build Python of the same source, so that the
bytecode magic matches the wasm interpreter.
"""
import importlib._bootstrap_external as be
import importlib.util
import os
import sys
import zipfile

PREFIX = "/usr/lib/python3.11"
SKIP_DIRS = {"test", "tests", "idlelib", "tkinter", "turtledemo", "__pycache__", "site-packages"}
SKIP_FILES = {"turtle.py"}
DATE = (1980, 1, 1, 0, 0, 0)


def entries(lib):
    for dirpath, dirnames, filenames in os.walk(lib):
        dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS)
        rel = os.path.relpath(dirpath, lib)
        for name in sorted(filenames):
            if name in SKIP_FILES or name.endswith((".pyc", ".orig", ".rej")):
                continue
            yield os.path.normpath(os.path.join(rel, name)), os.path.join(dirpath, name)


def pyc(src, rel):
    with open(src, "rb") as f:
        data = f.read()
    code = compile(data, PREFIX + "/" + rel, "exec", dont_inherit=True, optimize=1)
    return bytes(be._code_to_hash_pyc(code, importlib.util.source_hash(data), checked=False))


def cached(rel):
    """The bytecode path of the source rel: PEP 3147's, for the cache tag
    of the interpreter (optimization level 0, as python3 runs)."""
    d, base = os.path.split(rel)
    return os.path.join(d, "__pycache__", base[:-3] + "." + sys.implementation.cache_tag + ".pyc")


def add(z, name, data, mode=0o644):
    info = zipfile.ZipInfo(name, DATE)
    info.external_attr = (0o100000 | mode) << 16
    info.create_system = 3
    info.compress_type = zipfile.ZIP_DEFLATED
    z.writestr(info, data, compresslevel=9)


def adddir(z, name):
    info = zipfile.ZipInfo(name.rstrip("/") + "/", DATE)
    info.external_attr = (0o040755 << 16) | 0x10
    info.create_system = 3
    z.writestr(info, b"")


def main():
    lib, sysconfigdata, out = sys.argv[1:4]
    files = []
    for rel, src in entries(lib):
        if rel.endswith(".py"):
            with open(src, "rb") as f:
                files.append((rel, f.read()))
            files.append((cached(rel), pyc(src, rel)))
        else:
            with open(src, "rb") as f:
                files.append((rel, f.read()))
    # The build names it _sysconfigdata__{platform}_{multiarch}; Debian's
    # sysconfig looks for _sysconfigdata_{abiflags}_{multiarch}.
    base = os.path.basename(sysconfigdata)
    name = "_sysconfigdata__" + base[:-3].rsplit("_", 1)[1] + ".py"
    with open(sysconfigdata, "rb") as f:
        files.append((name, f.read()))
    files.append((cached(name), pyc(sysconfigdata, name)))
    files.sort()
    dirs = {"lib-dynload", "site-packages"}
    for name, _ in files:
        d = os.path.dirname(name)
        while d:
            dirs.add(d)
            d = os.path.dirname(d)
    tmp = out + ".tmp"
    with zipfile.ZipFile(tmp, "w") as z:
        for d in sorted(dirs):
            adddir(z, d)
        for name, data in files:
            add(z, name, data)
    os.replace(tmp, out)


if __name__ == "__main__":
    main()
