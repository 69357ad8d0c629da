"""gpud._transfer — the Client's arrays: uploads, downloads, buffers allocated,
overwritten, freed and listed, staging host memory, and numpy arrays in host
memory shared with gpud (empty, asarray).

Owners: methods of gpud.Client (this class is one of its bases), shared by
the client's threads under its guard (_enter/_leave); host memory
bookkeeping (``_hosts``, ``_dead_hosts``) under the client's ``_mu``, the
staging memory under ``_stage_lock``. See gpud._client.
"""
from __future__ import annotations

import ctypes
from typing import Any, List, Sequence, Union

import numpy as np

from . import _dtypes, _fast
from ._buffer import Buffer
from ._dtypes import NUMPY, as_array, as_dtype_name, code_of, describe
from ._errors import ArgumentTypeError, InvalidArgument, Status, error_for
from ._lib import BufferInfo, lib

STAGE_MIN = 1 << 20  # arrays this big go through staging host memory (see _staging)
_MAX_DIM = (1 << 62) - 1  # elements in one dimension of alloc's and empty's shapes

_byref = ctypes.byref


class _HostMemory:
    """gpud_host_alloc memory under numpy arrays; given back when the last one goes."""

    __slots__ = ("__array_interface__", "client", "ptr", "nbytes")

    def __init__(self, client, ptr, nbytes, dtype, shape):
        self.client = client
        self.ptr = ptr
        self.nbytes = nbytes
        self.__array_interface__ = {"data": (ptr, False), "shape": shape,
                                    "typestr": dtype.str, "version": 3}

    def __del__(self):
        c = self.client
        if c is not None:
            c._host_gone(self)



class Transfers:
    """The Client's uploads, downloads, buffers and host memory (a base of gpud.Client)."""

    # --- buffers ------------------------------------------------------------------------

    # Staging: arrays of STAGE_MIN bytes and more that are not in host memory go to
    # gpud through this client's own gpud_host_alloc memory, sized to the largest array
    # so far (a power of two) and reused: one memcpy, then DMA. libgpud-client would use
    # its 64 MiB scratch region instead, which a fresh process pays to pin in full.
    def _staging(self, n):
        """Address of at least n bytes of staging memory, taken (give back with
        _stage_lock.release()); None where there is none to take (busy, tcp://)."""
        if not self._shm or n < STAGE_MIN or not self._stage_lock.acquire(blocking=False):
            return None
        st = self._stage
        if st is None or st[1] < n:
            if st is not None:
                self._stage = None
                lib.gpud_host_free(self._c, st[0])
            size = 1 << (n - 1).bit_length()
            p = lib.gpud_host_alloc(self._c, size)
            if not p:
                self._stage_lock.release()
                return None
            self._stage = st = (p, size)
        return st[0]

    def _alloc_raw(self, c, code, a, what):
        shape = (ctypes.c_uint64 * max(a.ndim, 1))(*a.shape)
        h = ctypes.c_uint64()
        nb = a.nbytes
        p = None if self._in_host_memory(a) else self._staging(nb)
        if p is not None:
            try:
                ctypes.memmove(p, _fast.address(a), nb)
                st = lib.gpud_alloc(c, code, a.ndim, shape, p, _byref(h))
            finally:
                self._stage_lock.release()
        else:
            st = lib.gpud_alloc(c, code, a.ndim, shape, _fast.address(a) if nb else None,
                                _byref(h))
        if st != 0:
            self._fail(st)
        return h.value

    def _get_into(self, c, h, out):
        """Downloads buffer h into the numpy array out (C-contiguous, its size)."""
        nb = out.nbytes
        if not nb:
            return
        p = self._staging(nb)
        if p is not None:
            try:
                st = lib.gpud_download_range(c, h, 0, p, nb)
                if st == 0:
                    ctypes.memmove(_fast.address(out), p, nb)
            finally:
                self._stage_lock.release()
        else:
            st = lib.gpud_download_range(c, h, 0, _fast.address(out), nb)
        if st != 0:
            self._fail(st)

    def upload(self, a: Any, keep: bool = False) -> Buffer:
        """Copies an array into a new gpud.Buffer (over ipc://, 1 MiB and more by DMA).

        a: a numpy array (or array-like) of float32, float64, int32, int64, complex64 or
        complex128;
        non-contiguous and byte-swapped arrays are converted first.
        keep=True: the buffer belongs to the tenant, outlives this client
        and counts against the kept_buffers quota until freed.
        """
        arr, code = as_array(a, "upload: argument 'a'")
        if keep:
            kc = self._keep_client
            if kc is None:
                kc = self._keep_client = self._open_like(keep=True)
            h = kc._upload_owned(arr, code)
            return Buffer(self, h, arr.dtype, arr.shape, owned=False, kept=True)
        return Buffer(self, self._upload_owned(arr, code), arr.dtype, arr.shape)

    def _open_like(self, keep):
        # a Client like this one (type(self): this class is one of its bases,
        # so this module never imports gpud._client, which imports it)
        url, token, timeout, cto = self._connect_args
        kc = type(self)(url=lib.gpud_url(self._c).decode(), token=token, timeout=timeout,
                        connect_timeout=cto)
        if keep:
            lib.gpud_set_keep(kc._c, 1)
        return kc

    def _upload_owned(self, arr, code):
        c = self._enter()
        try:
            h = self._alloc_raw(c, code, arr, "upload")
            self._owned.add(h)
            return h
        finally:
            self._leave()

    def alloc(self, shape: Union[int, Sequence[int]], dtype: Any = "float64") -> Buffer:
        """A new gpud.Buffer of that shape and dtype; its contents are undefined until written."""
        shape = self._shape(shape, "alloc")
        dt = np.dtype(as_dtype_name(dtype, "alloc: dtype"))
        c = self._enter()
        try:
            sh = (ctypes.c_uint64 * max(len(shape), 1))(*shape)
            h = ctypes.c_uint64()
            st = lib.gpud_alloc(c, code_of(dt), len(shape), sh, None, _byref(h))
            if st != 0:
                self._fail(st)
            self._owned.add(h.value)
        finally:
            self._leave()
        return Buffer(self, h.value, dt, shape)

    @staticmethod
    def _shape(shape, what):
        if isinstance(shape, (int, np.integer)) and not isinstance(shape, bool):
            shape = (shape,)
        try:
            if isinstance(shape, (str, bytes)) or any(
                    isinstance(n, bool) or not isinstance(n, (int, np.integer)) for n in shape):
                raise TypeError
            shape = tuple(int(n) for n in shape)
        except TypeError:
            raise ArgumentTypeError("%s: shape must be an int or a tuple of ints, got %s"
                                    % (what, describe(shape)))
        if len(shape) > _dtypes.MAX_DIMS:
            raise InvalidArgument("%s: shape %s has %d dimensions; gpud takes at most %d"
                                  % (what, shape, len(shape), _dtypes.MAX_DIMS))
        for i, n in enumerate(shape):
            if n < 0 or n > _MAX_DIM:
                raise InvalidArgument("%s: shape %s: dimension %d is %d; gpud takes 0 to 2**62 "
                                      "- 1 elements per dimension" % (what, shape, i, n))
        return shape

    def _download(self, buf):
        h = buf.handle
        out = np.empty(buf.shape, buf.dtype)
        c = self._enter()
        try:
            self._get_into(c, h, out)
        finally:
            self._leave()
        return out

    def _set(self, buf, a):
        h = buf.handle
        arr, code = as_array(a, "Buffer.set: argument 'a'", 1 << code_of(buf.dtype))
        if arr.size != buf.size:
            raise InvalidArgument("Buffer.set: the buffer has %d elements, got %d"
                                  % (buf.size, arr.size))
        c = self._enter()
        try:
            p = None if self._in_host_memory(arr) else self._staging(arr.nbytes)
            if p is not None:
                try:
                    ctypes.memmove(p, _fast.address(arr), arr.nbytes)
                    st = lib.gpud_upload(c, h, 0, p, arr.nbytes)
                finally:
                    self._stage_lock.release()
            elif arr.nbytes:
                st = lib.gpud_upload(c, h, 0, _fast.address(arr), arr.nbytes)
            else:
                st = 0
            if st != 0:
                self._fail(st)
        finally:
            self._leave()

    def _free_now(self, h):
        c = self._enter()
        try:
            hs = (ctypes.c_uint64 * 1)(h)
            st = lib.gpud_free(c, hs, 1)
            self._owned.discard(h)
            if st != 0:
                self._fail(st)
        finally:
            self._leave()

    def buffers(self) -> List[Buffer]:
        """The tenant's kept buffers (gpuctl ls), as gpud.Buffer objects."""
        c = self._enter()
        try:
            p = ctypes.POINTER(BufferInfo)()
            n = ctypes.c_size_t()
            st = lib.gpud_list(c, _byref(p), _byref(n))
            if st != 0:
                self._fail(st)
            out = []
            for i in range(n.value):
                b = p[i]
                out.append(Buffer(self, b.handle, NUMPY[b.dtype], tuple(b.shape[:b.ndim]),
                                  owned=False, kept=bool(b.kept)))
            lib.gpud_free_libc(p)
            return out
        finally:
            self._leave()

    # --- host memory shared with gpud --------------------------------------------------

    def empty(self, shape: Union[int, Sequence[int]], dtype: Any = "float64") -> np.ndarray:
        """A numpy array in host memory shared with gpud (gpud_host_alloc; zero-filled).

        Passed to run()/upload(), its bytes go to the device by DMA from these
        pages: no copy on the client's side, one request whatever the size.
        Needs an ipc:// connection (Unsupported over tcp://).
        """
        shape = self._shape(shape, "empty")
        dt = np.dtype(as_dtype_name(dtype, "empty: dtype"))
        n = dt.itemsize
        for d in shape:
            n *= d
        if n == 0:
            return np.empty(shape, dt)
        if n >= 1 << 64:
            raise InvalidArgument("empty: shape %s of %s is %d bytes, more than a size_t holds"
                                  % (shape, dt.name, n))
        c = self._enter()
        try:
            p = lib.gpud_host_alloc(c, n)
            if not p:
                msg = lib.gpud_errmsg(c).decode("utf-8", "replace")
                st = Status.EUNSUPPORTED if not self._shm else Status.ENOMEM
                raise error_for(st, msg or "gpud_host_alloc of %d bytes failed" % n)
            with self._mu:
                self._hosts[p] = n
        finally:
            self._leave()
        return np.asarray(_HostMemory(self, p, n, dt, shape))

    def asarray(self, a: Any) -> np.ndarray:
        """a in host memory shared with gpud (a copy, unless it is there already)."""
        arr, _ = as_array(a, "asarray: argument 'a'")
        if self._in_host_memory(arr):
            return arr
        out = self.empty(arr.shape, arr.dtype)
        np.copyto(out, arr)
        return out

    def _in_host_memory(self, a):
        if not self._hosts or not a.nbytes:
            return False
        p = a.__array_interface__["data"][0]
        for base, n in list(self._hosts.items()):
            if base <= p and p + a.nbytes <= base + n:
                return True
        return False

    def _host_gone(self, mem):
        with self._mu:
            self._hosts.pop(mem.ptr, None)
            if self._c is None:
                return
            if not self._closed:
                self._dead_hosts.append(mem.ptr)
                return
            last = self._c_close_pending and not self._hosts
        if last:
            self._close_c()
