"""gpud._many_pipe — lombscargle_many's pipelined path: a batch's chunks staged in
host memory shared with gpud, several in flight, each chunk's rows copied into
their place in one result array.

How a batch goes (over ipc://, where gpud shares host memory with the client):
  1. The batch is cut into chunks of consecutive series of at most
     PIPE_CHUNK_BYTES of inputs and output (and at most the run budget
     lombscargle_many worked out). Each chunk is worked in a slot: one
     region of gpud_host_alloc memory (pinned by gpud, lent from its
     pre-pinned pieces where it fits one), at most PIPE_DEPTH of them, made
     as workers first need them, reused chunk after chunk, freed at the end.
  2. PIPE_DEPTH worker threads each take the next chunk: its series
     concatenated straight into the slot (x, y, weights, offsets, freqs;
     gpud reads them there, nothing is copied on the way), one gpud_call_to
     whose output gpud writes into the same slot, then the rows copied into
     the result, an np.empty the size of the batch's output. numpy copies
     with the GIL released, and ctypes calls release it, so the result's
     first-touch page faults spread over the workers and overlap the device's
     work on the other chunks; no final concatenation.
  3. A chunk refused for memory (gpud.OutOfMemory, gpud.QuotaExceeded) is
     halved and retried in its slot. A refused argument names its series by
     its index in the batch. Once a chunk has failed no further chunk is
     sent; the error of the first failing chunk in batch order is raised once
     every chunk in flight has ended, and the slots are given back.

run() returns None where this path does not apply (no shared memory, a
batch under PIPE_MIN_BYTES, arguments for the general path to judge):
lombscargle_many then goes through Client.run as before.

Owners: a batch's slots, threads and result belong to its call; a slot is held
by one worker at a time (a queue of free slots). The client is used inside its
guard (_enter/_leave) only, as by every Client method.
"""
from __future__ import annotations

import concurrent.futures
import ctypes
import queue
import threading
import traceback

import numpy as np

from ._dtypes import NUMPY, code_of
from ._errors import Error, InvalidArgument, OutOfMemory, ProtocolError, Status, error_for
from ._lib import ARG_ARRAY, ARG_BOOL, ARG_F64, ARG_I64, ARG_TEXT, Arg, Array, Result, lib

#: Bytes of one chunk's inputs and output: a slot of this size is one piece
#: of gpud's pre-pinned lending (lend_unit, 32 MiB by default).
PIPE_CHUNK_BYTES = 32 << 20
#: Chunks in flight at once (worker threads, and slots of PIPE_CHUNK_BYTES).
PIPE_DEPTH = 4
#: Batches of fewer bytes (inputs and output) go as one Client.run.
PIPE_MIN_BYTES = 1 << 20

_ALIGN = 64
_PAD = 6 * _ALIGN  # a chunk's up to five arrays and its output, each 64-byte aligned
_PAGE = 4096
_KERNEL = b"lombscargle_many"
_INT64 = (-(1 << 63), (1 << 63) - 1)
_byref = ctypes.byref

_call_to_c = lib.gpud_call_to


# A fresh region's pages are mapped in this process as they are first touched
# (a fault each, ~2.5 us a page on a 2-core test machine: 21 ms per 32 MiB);
# MADV_POPULATE_WRITE (Linux 5.14) maps them in one call, a quarter of that.
# Older kernels refuse it (EINVAL): the pages then fault in as used.
_MADV_POPULATE_WRITE = 23
try:
    _madvise = ctypes.CDLL(None).madvise
    _madvise.restype = ctypes.c_int
    _madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
except (AttributeError, OSError):
    _madvise = None


def _up(n, a=_ALIGN):
    return (n + a - 1) // a * a


def _scalar_args(values):
    """[(name, kind, value)] of the run's scalars, None if one is of a type the
    general path should judge (its conversion and its messages)."""
    out = []
    for name, v in values.items():
        if v is None or isinstance(v, np.ndarray):
            continue
        t = type(v)
        if t is bool:
            out.append((name.encode(), ARG_BOOL, v))
        elif t is int and _INT64[0] <= v <= _INT64[1]:
            out.append((name.encode(), ARG_I64, v))
        elif t is float:
            out.append((name.encode(), ARG_F64, v))
        elif t is str:
            out.append((name.encode(), ARG_TEXT, v.encode()))
        else:
            return None
    return out


def _call(c, argv, nargs, dst, room):
    """gpud_call_to of one chunk: (status, its one result, in_dst), the error raised.
    (A function of the module's so tests can stand in for gpud.)"""
    res = (Result * 1)()
    nout = ctypes.c_size_t()
    in_dst = ctypes.c_int()
    cc = c._enter()
    try:
        st = _call_to_c(cc, _KERNEL, argv, nargs, dst, room, res, 1, _byref(nout), None,
                        _byref(in_dst))
        if st != 0:
            msg = lib.gpud_errmsg(cc)  # this thread's
            raise error_for(st, msg.decode("utf-8", "replace") if msg else
                            lib.gpud_strerror(st).decode())
    finally:
        c._leave()
    if nout.value != 1:
        raise ProtocolError("lombscargle_many: gpud returned %d outputs, expected 1"
                            % nout.value, Status.EPROTO)
    return res[0].array, bool(in_dst.value)


class _Batch:
    """One pipelined lombscargle_many: its inputs, its slots, its result."""

    def __init__(self, c, xl, yl, wl, freqs, scalars, dt, odt, m, slot_bytes, shifted):
        self.c, self.xl, self.yl, self.wl, self.freqs = c, xl, yl, wl, freqs
        self.scalars, self.dt, self.odt, self.m = scalars, dt, odt, m
        self.lens = np.fromiter((len(x) for x in xl), np.int64, len(xl))
        self.slot_bytes = slot_bytes
        self.shifted = shifted
        self.result = np.empty((len(xl), m), odt)  # pages touched by the workers' copies
        self.free = queue.SimpleQueue()  # (address, numpy uint8 array) of free slots
        self.lock = threading.Lock()
        self.made = 0
        self.depth = 1
        self.failed = threading.Event()

    # --- slots ------------------------------------------------------------------------

    def new_slot(self):
        """A fresh region of slot_bytes (Client.empty: given back to gpud once no
        array refers to it), or None if gpud has none to give."""
        try:
            mem = self.c.empty(self.slot_bytes // 8, "float64").view(np.uint8)
        except Error:
            return None
        p = mem.__array_interface__["data"][0]
        if _madvise is not None:  # its pages mapped in one go, not faulted in one by one
            _madvise(p, self.slot_bytes, _MADV_POPULATE_WRITE)
        return p, mem

    def take_slot(self):
        try:
            return self.free.get_nowait()
        except queue.Empty:
            pass
        with self.lock:
            make = self.made < self.depth
            if make:
                self.made += 1
        s = self.new_slot() if make else None
        return s if s is not None else self.free.get()  # one exists: it comes back

    def free_slots(self):
        """Drops the slots: gpud_host_free of each at once, through the client's next
        call (here), unless something still refers to one (then when it goes)."""
        self.free = None
        try:
            self.c._enter()
        except Error:  # closed: the regions went with the connection
            return
        self.c._leave()

    # --- one chunk --------------------------------------------------------------------

    def task(self, lo, hi):
        if self.failed.is_set():
            return
        try:
            s = self.take_slot()
            try:
                self.run_split(lo, hi, s)
            finally:
                self.free.put(s)
        except BaseException:
            self.failed.set()
            raise

    def run_split(self, lo, hi, s):
        try:
            self.run(lo, hi, s)
        except OutOfMemory:
            if hi - lo <= 1:
                raise
            mid = lo + (hi - lo) // 2
            self.run_split(lo, mid, s)
            self.run_split(mid, hi, s)

    def run(self, lo, hi, slot):
        p, mem = slot
        dt, k = self.dt, hi - lo
        n = int(self.lens[lo:hi].sum())
        arrays = []
        at = 0

        def place(name, src, count, adt):
            nonlocal at
            nb = count * adt.itemsize
            v = mem[at:at + nb].view(adt)
            if isinstance(src, list):
                np.concatenate(src, out=v)
            else:
                v[...] = src
            arrays.append((name, code_of(adt), count, p + at, nb))
            at = _up(at + nb)

        place(b"x", self.xl[lo:hi], n, dt)
        place(b"y", self.yl[lo:hi], n, dt)
        if self.wl is not None:
            place(b"weights", self.wl[lo:hi], n, dt)
        offs = np.zeros(k + 1, np.int64)
        np.cumsum(self.lens[lo:hi], out=offs[1:])
        place(b"offsets", offs, k + 1, np.dtype(np.int64))
        if self.freqs is not None:
            place(b"freqs", self.freqs, self.freqs.size, dt)
        nargs = len(arrays) + len(self.scalars)
        argv = (Arg * nargs)()
        gas = (Array * len(arrays))()
        for i, (name, code, count, addr, nb) in enumerate(arrays):
            ga = gas[i]
            ga.dtype, ga.ndim, ga.data, ga.nbytes = code, 1, addr, nb
            ga.shape[0] = count
            argv[i].name, argv[i].kind = name, ARG_ARRAY
            argv[i].v.array = ctypes.pointer(ga)
        for i, (name, kind, v) in enumerate(self.scalars, len(arrays)):
            argv[i].name, argv[i].kind = name, kind
            if kind == ARG_BOOL:
                argv[i].v.b = v
            elif kind == ARG_I64:
                argv[i].v.i64 = v
            elif kind == ARG_F64:
                argv[i].v.f64 = v
            else:
                argv[i].v.text = v
        if self.failed.is_set():  # another chunk failed while this one was staged
            return
        try:
            ga, in_dst = _call(self.c, argv, nargs, p + at, self.slot_bytes - at)
        except InvalidArgument as e:
            self.failed.set()
            raise self.shifted(e, lo) from None
        try:
            shape = tuple(ga.shape[:ga.ndim])
            if shape != (k, self.m) or NUMPY.get(ga.dtype) != self.odt:
                raise ProtocolError("lombscargle_many: gpud returned %s %s, expected %s %s"
                                    % (NUMPY.get(ga.dtype), shape, self.odt, (k, self.m)),
                                    Status.EPROTO)
            if in_dst:
                src = mem[at:at + ga.nbytes]
            else:  # did not fit the room offered: in the library's memory
                src = np.frombuffer((ctypes.c_uint8 * ga.nbytes).from_address(ga.data),
                                    np.uint8)
            np.copyto(self.result[lo:hi], src.view(self.odt).reshape(k, self.m))
        finally:
            if not in_dst:
                lib.gpud_array_free(_byref(ga))


def run(c, xl, yl, wl, args, scalars, dt, odt, m, sizes, fixed, budget, chunks, shifted):
    """The batch's (B, m) periodograms through the pipeline, or None where it does
    not apply (see the module's docstring). chunks is lombscargle_many's
    _chunks(sizes, fixed, budget)."""
    if m < 1 or not getattr(c, "has_shm", False):
        return None
    if sum(sizes) + fixed < PIPE_MIN_BYTES:
        return None
    sc = _scalar_args({**scalars, **args})
    if sc is None:
        return None
    freqs = args.get("freqs")
    fixed += _PAD
    cuts = list(chunks(sizes, fixed, max(1, min(budget, PIPE_CHUNK_BYTES))))
    csum = np.concatenate(([0], np.cumsum(sizes, dtype=np.int64)))
    slot_bytes = _up(max(int(csum[hi] - csum[lo]) for lo, hi in cuts) + fixed, _PAGE)
    b = _Batch(c, xl, yl, wl, freqs, sc, dt, odt, m, slot_bytes, shifted)
    first = b.new_slot()
    if first is None:  # no shared memory to be had: the general path
        return None
    b.made = 1
    b.free.put(first)
    del first
    b.depth = max(1, min(PIPE_DEPTH, len(cuts)))
    try:
        if b.depth == 1:
            for lo, hi in cuts:
                b.task(lo, hi)
            return b.result
        ex = concurrent.futures.ThreadPoolExecutor(b.depth, thread_name_prefix="gpud-many")
        try:
            futs = [ex.submit(b.task, lo, hi) for lo, hi in cuts]
            concurrent.futures.wait(futs)
        finally:
            b.failed.set()  # interrupted: no more chunks start
            ex.shutdown(wait=True, cancel_futures=True)
        for f in futs:  # the first failure in batch order, as one run after another would
            e = f.exception()
            if e is not None:
                raise e
        return b.result
    except BaseException as e:
        _forget_frames(e)
        raise
    finally:
        b.free_slots()


def _forget_frames(e):
    """Clears the ended frames of e's tracebacks (and of the exceptions it chains):
    their locals are views of the slots, which must not keep them mapped."""
    seen = set()
    while e is not None and id(e) not in seen:
        seen.add(id(e))
        traceback.clear_frames(e.__traceback__)
        e = e.__cause__ or e.__context__
