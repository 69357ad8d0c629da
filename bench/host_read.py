"""bench/host_read.py — a file's bytes into memory gpud lends, two ways: the pages mapped in
this process in one call (MADV_POPULATE_WRITE) and the file read into them (what gpuctl run
did with its .npy inputs), against gpud_host_read (sendfile onto the memory's descriptor:
the kernel copies, the pages are never mapped here). Fresh lent memory for every copy
(gpud_host_alloc, then gpud_host_free), as a fresh gpuctl has; the file in the page cache.

Printed per size: the median over ROUNDS of each way's time in ms, and their ratio; the two
ways alternate round by round, and each result is checked against the file.

  python3 bench/host_read.py GPUD LIBGPUD_CLIENT_SO [--backend cpu|cuda] [--rounds N]

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
MADV_POPULATE_WRITE = 23


def main():
    a = gpud_proc.arguments(__doc__, "cpu", "rounds", 20)
    _lib = gpud_proc.package(a.lib)
    Options, lib = _lib.Options, _lib.lib
    libc = ctypes.CDLL(None, use_errno=True)
    libc.madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    lib.gpud_host_alloc.restype = ctypes.c_void_p
    lib.gpud_host_alloc.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
    lib.gpud_host_free.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
    lib.gpud_host_read.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int,
                                   ctypes.c_uint64, ctypes.c_size_t]
    lib.gpud_host_read.restype = ctypes.c_int
    with tempfile.TemporaryDirectory() as d:
        proc, url = gpud_proc.start(a.gpud, d, a.backend, "host_read")
        try:
            c = ctypes.c_void_p()
            o = Options(url=url.encode())
            if lib.gpud_connect_opts(ctypes.byref(o), ctypes.byref(c)) != 0:
                raise SystemExit("host_read: cannot connect to %s" % url)
            rows = []
            for mib in SIZES_MIB:
                n = mib << 20
                want = os.urandom(n)
                path = os.path.join(d, "in-%d.bin" % mib)
                with open(path, "wb") as f:
                    f.write(want)
                fd = os.open(path, os.O_RDONLY)
                os.pread(fd, n, 0)  # in the page cache
                t_map, t_send = [], []
                for r in range(a.rounds):
                    for way in ((0, 1) if r % 2 == 0 else (1, 0)):
                        p = lib.gpud_host_alloc(c, n)
                        if not p:
                            raise SystemExit("host_read: gpud_host_alloc(%d) failed" % n)
                        view = (ctypes.c_char * n).from_address(p)
                        t0 = time.perf_counter()
                        if way == 0:
                            libc.madvise(p, n, MADV_POPULATE_WRITE)
                            got = os.preadv(fd, [memoryview(view).cast("B")], 0)
                        else:
                            got = n if lib.gpud_host_read(c, p, fd, 0, n) == 0 else -1
                        dt = time.perf_counter() - t0
                        if got != n or bytes(view) != want:
                            raise SystemExit("host_read: %d MiB, way %d: wrong bytes" % (mib, way))
                        (t_map if way == 0 else t_send).append(dt)
                        lib.gpud_host_free(c, ctypes.c_void_p(p))
                os.close(fd)
                rows.append((mib, statistics.median(t_map) * 1e3,
                             statistics.median(t_send) * 1e3))
            lib.gpud_close(c)
        finally:
            proc.terminate()
            proc.wait()
    print("a file into fresh lent memory, gpud backend %s, medians of %d rounds, ms"
          % (a.backend, a.rounds))
    print("%8s %22s %18s %8s" % ("size", "map + read (before)", "gpud_host_read", "ratio"))
    for mib, m, s in rows:
        print("%5d MiB %22.3f %18.3f %7.2fx" % (mib, m, s, m / s))


if __name__ == "__main__":
    main()
