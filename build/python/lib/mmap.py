"""mmap for wasm32-wasi (wasmbox): WASI cannot map files.

The module imports, so that programs (pip's vendored cachecontrol) that
import it for an optional use keep working; creating a map fails with
OSError(ENOSYS).
"""
import errno as _errno

ACCESS_DEFAULT, ACCESS_READ, ACCESS_WRITE, ACCESS_COPY = 0, 1, 2, 3
PROT_READ, PROT_WRITE, PROT_EXEC = 1, 2, 4
MAP_SHARED, MAP_PRIVATE, MAP_ANONYMOUS = 1, 2, 0x20
MAP_ANON = MAP_ANONYMOUS
PAGESIZE = ALLOCATIONGRANULARITY = 65536
error = OSError


class mmap:
    def __init__(self, *args, **kwargs):
        raise OSError(_errno.ENOSYS, "mmap is not supported on WASI")
