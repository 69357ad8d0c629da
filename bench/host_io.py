"""bench/host_io.py — a file's bytes into memory gpud lends, and that memory's bytes into a
file, the ways a fresh gpuctl run has done it.

Into lent memory (a .npy input):
  - map + read:  the pages mapped in this process in one call (MADV_POPULATE_WRITE) and
                 the file read into them (gpuctl run before d44a0e5);
  - sendfile:    gpud_host_read with gpud's copies off (GPUD_NO_FILE_COPY=1): the kernel
                 copies onto the memory's descriptor, the pages never mapped here;
  - gpud:        gpud_host_read: gpud reads the file through its own mapping, whose pages
                 it faulted in when it made the memory (GPUD_SHM_READ).
Out of lent memory (a run's output, written over an existing file of the same size, as
gpuctl writes -o):
  - map + write: the pages mapped in one call (MADV_POPULATE_READ, what gpud_call_to does
                 with outputs) and pwrite from them;
  - gpud:        gpud_host_write: gpud writes from its own mapping (GPUD_SHM_WRITE).
Fresh lent memory for every copy (gpud_host_alloc, then gpud_host_free), as a fresh gpuctl
has; the file in the page cache. The ways alternate round by round (drift hits all
alike); every result is checked against the file. Printed per size: the median over
ROUNDS of each way's time in ms.

  python3 bench/host_io.py GPUD LIBGPUD_CLIENT_SO [--backend cpu|cuda] [--rounds N]

GPUD is started on a socket of its own (default backend cpu: the copies are the host's);
the Python package is the one at python/ beside this bench/.
"""
import ctypes
import os
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpud_proc  # noqa: E402  (starting gpud, the package)

SIZES_MIB = (1, 4, 8)
MADV_POPULATE_READ, MADV_POPULATE_WRITE = 22, 23
IN_WAYS = ("map + read", "sendfile", "gpud")
OUT_WAYS = ("map + write", "gpud")


def main():
    a = gpud_proc.arguments(__doc__, "cpu", "rounds", 20)
    _lib = gpud_proc.package(a.lib)
    Options, lib = _lib.Options, _lib.lib
    libc = ctypes.CDLL(None, use_errno=True)
    libc.madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    lib.gpud_host_alloc.restype = ctypes.c_void_p
    lib.gpud_host_alloc.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
    lib.gpud_host_free.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
    for f in (lib.gpud_host_read, lib.gpud_host_write):
        f.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int, ctypes.c_uint64,
                      ctypes.c_size_t]
        f.restype = ctypes.c_int
    os.environ.pop("GPUD_NO_FILE_COPY", None)
    with tempfile.TemporaryDirectory() as d:
        proc, url = gpud_proc.start(a.gpud, d, a.backend, "host_io")
        try:
            c = ctypes.c_void_p()
            o = Options(url=url.encode())
            if lib.gpud_connect_opts(ctypes.byref(o), ctypes.byref(c)) != 0:
                raise SystemExit("host_io: cannot connect to %s" % url)

            def lent(n):
                p = lib.gpud_host_alloc(c, n)
                if not p:
                    raise SystemExit("host_io: gpud_host_alloc(%d) failed" % n)
                return p

            def read_in(way, p, fd, n):
                t0 = time.perf_counter()
                if way == 0:
                    view = (ctypes.c_char * n).from_address(p)
                    libc.madvise(p, n, MADV_POPULATE_WRITE)
                    ok = os.preadv(fd, [memoryview(view).cast("B")], 0) == n
                else:
                    if way == 1:
                        os.environ["GPUD_NO_FILE_COPY"] = "1"
                    ok = lib.gpud_host_read(c, p, fd, 0, n) == 0
                    os.environ.pop("GPUD_NO_FILE_COPY", None)
                return time.perf_counter() - t0, ok

            rows = []
            for mib in SIZES_MIB:
                n = mib << 20
                want = os.urandom(n)
                src = os.path.join(d, "in-%d.bin" % mib)
                dst = os.path.join(d, "out-%d.bin" % mib)
                for path, data in ((src, want), (dst, b"\0" * n)):
                    with open(path, "wb") as f:
                        f.write(data)
                fd = os.open(src, os.O_RDONLY)
                out = os.open(dst, os.O_RDWR)
                os.pread(fd, n, 0)  # in the page cache
                t_in = [[] for _ in IN_WAYS]
                t_out = [[] for _ in OUT_WAYS]
                for r in range(a.rounds):
                    for k in range(len(IN_WAYS)):
                        way = (k + r) % len(IN_WAYS)
                        p = lent(n)
                        dt, ok = read_in(way, p, fd, n)
                        if not ok or ctypes.string_at(p, n) != want:
                            raise SystemExit("host_io: %d MiB in, %s: wrong bytes"
                                             % (mib, IN_WAYS[way]))
                        t_in[way].append(dt)
                        lib.gpud_host_free(c, ctypes.c_void_p(p))
                    for k in range(len(OUT_WAYS)):
                        way = (k + r) % len(OUT_WAYS)
                        p = lent(n)
                        read_in(2, p, fd, n)  # the output's bytes, not mapped here
                        os.pwrite(out, b"\1" * 4096, 0)  # changed, so a write must happen
                        t0 = time.perf_counter()
                        if way == 0:
                            libc.madvise(p, n, MADV_POPULATE_READ)
                            view = (ctypes.c_char * n).from_address(p)
                            ok = os.pwrite(out, memoryview(view).cast("B"), 0) == n
                        else:
                            ok = lib.gpud_host_write(c, p, out, 0, n) == 0
                        t_out[way].append(time.perf_counter() - t0)
                        if not ok or os.pread(out, n, 0) != want:
                            raise SystemExit("host_io: %d MiB out, %s: wrong bytes"
                                             % (mib, OUT_WAYS[way]))
                        lib.gpud_host_free(c, ctypes.c_void_p(p))
                os.close(fd)
                os.close(out)
                rows.append((mib, [statistics.median(t) * 1e3 for t in t_in],
                             [statistics.median(t) * 1e3 for t in t_out]))
            lib.gpud_close(c)
        finally:
            proc.terminate()
            proc.wait()
    print("files into and out of fresh lent memory, gpud backend %s, medians of %d rounds, ms"
          % (a.backend, a.rounds))
    print("%8s | %12s %12s %12s | %12s %12s" % (("size",) + IN_WAYS + OUT_WAYS))
    for mib, i, o in rows:
        print("%5d MiB | %12.3f %12.3f %12.3f | %12.3f %12.3f" % ((mib,) + tuple(i) + tuple(o)))


if __name__ == "__main__":
    main()
