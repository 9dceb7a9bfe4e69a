"""nodatacount.py IN OUT: copies the wasm module IN to OUT without its data
count section (section 12).

binaryen's wasm-opt writes a data count section into every module it
writes with bulk memory enabled, whether or not its code uses memory.init
or data.drop (the instructions that need it). The runtime's
wasmbin.PrepareReactor refuses a module with one (code could then address
the data segments the snapshot replaces), and a refused python.wasm ran as
a WASI command without _start: every `python3` printed nothing and exited
0. The data segments must all be active ones (as wasm-ld writes them);
code that still used memory.init or data.drop would make the module
invalid without the section, which the runtime's compile refuses with an
error, not silently.
"""
import sys


def uleb(b, i):
    r = s = 0
    while True:
        x = b[i]
        i += 1
        r |= (x & 0x7F) << s
        s += 7
        if x < 0x80:
            return r, i


def main(src, dst):
    b = open(src, "rb").read()
    if b[:8] != b"\0asm\1\0\0\0":
        sys.exit("%s: not a wasm module (version 1)" % src)
    out = bytearray(b[:8])
    i = 8
    while i < len(b):
        sid = b[i]
        n, j = uleb(b, i + 1)
        if j + n > len(b):
            sys.exit("%s: section %d at %d runs past the end" % (src, sid, i))
        if sid == 11:
            count, k = uleb(b, j)
            for _ in range(count):
                flags, k = uleb(b, k)
                if flags != 0:
                    sys.exit("%s: data segment with flags %d: only active segments of memory 0 can go without a data count section" % (src, flags))
                # offset: i32.const N end
                if b[k] != 0x41:
                    sys.exit("%s: data segment offset is not i32.const" % src)
                _, k = uleb(b, k + 1)
                if b[k] != 0x0B:
                    sys.exit("%s: data segment offset is not a constant expression" % src)
                size, k = uleb(b, k + 1)
                k += size
        if sid != 12:
            out += b[i : j + n]
        i = j + n
    open(dst, "wb").write(out)


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: nodatacount.py IN OUT")
    main(sys.argv[1], sys.argv[2])
