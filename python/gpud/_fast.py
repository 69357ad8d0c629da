"""gpud._fast — the warm one-trip path of Client.run, with as little Python as it takes.

After a run whose inputs went with the request (gpud_call), Client.run keeps a
Plan for that kernel and those argument names: one ctypes block holding the
gpud_arg array and a gpud_array per array argument, names and kinds filled in
once. A later run with the same names and the same kinds of values (arrays of
the same dtype, C-contiguous and writable; floats, ints, bools) only writes
each array's shape, address and size and each scalar into the block
(struct.pack_into) and calls gpud_call; outputs are copied out of the
library's memory into new numpy arrays. Anything else takes Client.run's
general path, which checks and converts everything.

Owners: a Plan is used by one call at a time: Client takes it out of its
table for the call and puts it back after (another thread meanwhile builds
its own).
"""
import ctypes
import struct

import numpy as np

from ._dtypes import NUMPY
from ._lib import ARG_ARRAY, ARG_BOOL, ARG_F64, ARG_I64, Arg, Result, lib

MISS = object()
COPY_MAX = 1 << 16  # results up to this size are copied out; bigger ones are wrapped
ARRAY_STRUCT = struct.Struct("=ii8QQQ")  # gpud_array
RESULT_STRUCT = struct.Struct("=64sii8QQQ")  # gpud_result
F64 = struct.Struct("=d")
I64 = struct.Struct("=q")
I32 = struct.Struct("=i")
ZEROS = tuple((0,) * (8 - n) for n in range(9))
INT64_MIN, INT64_MAX = -(1 << 63), (1 << 63) - 1
_addressof, _from_buffer = ctypes.addressof, ctypes.c_char.from_buffer
_ndarray = np.ndarray
_empty = np.empty
_memmove = ctypes.memmove
_free = ctypes.CDLL(None).free
_free.argtypes = [ctypes.c_void_p]
_free.restype = None
_byref = ctypes.byref
_call = lib.gpud_call


class Malloced:
    """Memory libgpud-client malloc'd (a gpud_call result) under a numpy array; freed with it."""

    __slots__ = ("__array_interface__", "data")

    def __init__(self, data, typestr, shape):
        self.data = data
        self.__array_interface__ = {"data": (data, False), "shape": shape,
                                    "typestr": typestr, "version": 3}

    def __del__(self):
        _free(self.data)


def result_array(data, nb, dtype, shape):
    """A result's bytes as a numpy array: small ones copied (and freed), big ones kept."""
    if nb > COPY_MAX:
        return np.asarray(Malloced(data, dtype.str, shape))
    a = _empty(shape, dtype)
    if nb:
        _memmove(_addressof(_from_buffer(a)), data, nb)
    _free(data)
    return a


def address(a):
    """The address of a's first byte (a writable array's cheaply)."""
    if a.flags.writeable:
        return _addressof(_from_buffer(a))
    return a.ctypes.data


class Plan:
    """A prepared gpud_call for one kernel and one set of argument names."""

    __slots__ = ("kernel", "slots", "mem", "argv", "n", "res", "cap", "nout", "names", "keep",
                 "limit", "count", "pcount")

    def __init__(self, kernel, items, nout, limit):
        """items: [(name, kind, dtype or None)] in argument order; kind ARG_*."""
        n = len(items)
        narr = sum(1 for _, kind, _ in items if kind == ARG_ARRAY)
        asz = ctypes.sizeof(Arg)
        size = n * asz + narr * ARRAY_STRUCT.size
        self.mem = mem = (ctypes.c_char * max(size, 1))()
        self.argv = (Arg * max(n, 1)).from_buffer(mem)
        base = _addressof(mem)
        self.kernel = kernel.encode()
        self.keep = []
        self.slots = []
        aoff = n * asz
        for i, (name, kind, dt) in enumerate(items):
            nb = name.encode()
            self.keep.append(nb)
            a = self.argv[i]
            a.name = nb
            a.kind = kind
            if kind == ARG_ARRAY:
                a.v.array = ctypes.cast(base + aoff, type(a.v.array))
                self.slots.append((name, kind, aoff, dt, _CODES[dt]))
                aoff += ARRAY_STRUCT.size
            else:
                self.slots.append((name, kind, i * asz + 16, None, 0))
        self.n = n
        self.nout = nout
        self.cap = max(nout, 1)
        self.res = (Result * self.cap)()
        self.limit = limit
        self.names = None
        self.count = ctypes.c_size_t()
        self.pcount = _byref(self.count)

    def run(self, client, args):
        """The outputs (one array, or a dict), or MISS when args do not fit the plan."""
        mem = self.mem
        total = 0
        for name, kind, off, dt, code in self.slots:
            v = args[name]
            if kind == ARG_ARRAY:
                if type(v) is not _ndarray or v.dtype is not dt or not v.flags.c_contiguous:
                    return MISS
                nd = v.ndim
                if nd > 8:
                    return MISS
                nb = v.nbytes
                total += nb
                ARRAY_STRUCT.pack_into(mem, off, code, nd, *(v.shape + ZEROS[nd]),
                                       address(v) if nb else 0, nb)
            elif kind == ARG_F64:
                if type(v) is not float:
                    return MISS
                F64.pack_into(mem, off, v)
            elif kind == ARG_I64:
                if type(v) is not int or not INT64_MIN <= v <= INT64_MAX:
                    return MISS
                I64.pack_into(mem, off, v)
            else:
                if type(v) is not bool:
                    return MISS
                I32.pack_into(mem, off, v)
        if total > self.limit:
            return MISS
        c = client._enter()
        try:
            st = _call(c, self.kernel, self.argv, self.n, self.res, self.cap, self.pcount, None)
            if st != 0:
                client._fail(st)
        finally:
            client._leave()
        outs = []
        res = self.res
        for j in range(self.count.value):
            name, dtype, ndim, s0, s1, s2, s3, s4, s5, s6, s7, data, nb = \
                RESULT_STRUCT.unpack_from(res, j * RESULT_STRUCT.size)
            shape = (s0, s1, s2, s3, s4, s5, s6, s7)[:ndim]
            outs.append((name, result_array(data, nb, NUMPY[dtype], shape)))
        if len(outs) == 1:
            return outs[0][1]
        return {name.rstrip(b"\0").decode(): a for name, a in outs}


_CODES = {dt: code for code, dt in NUMPY.items()}
