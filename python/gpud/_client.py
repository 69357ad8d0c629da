"""gpud._client — Client (one connection to gpud) and Buffer (an array that lives in gpud).

Owners: a Client is shared by any number of Python threads. libgpud-client
serves calls from many threads at once on its one connection; this module
adds only a count of calls in flight under ``_mu``, so that close() waits
for them instead of freeing the connection under them. The GIL is released
inside every call into the library (ctypes does that).

Lifetimes: a Buffer's array in gpud is freed by Buffer.free(), by its
``with`` block, by garbage collection (queued and freed by the client's next
call or close) or when the client closes (gpud frees what a connection
made). Host memory from Client.empty()/asarray() is gpud_host_alloc memory:
it stays mapped while any numpy array refers to it, even after close() (the
connection is then closed when the last such array goes); its gpud_host_free
is queued like a Buffer's free.
"""
from __future__ import annotations

import ctypes
import threading
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

import numpy as np

from . import _dtypes, _fast, _kernels
from ._dtypes import NUMPY, as_array, as_dtype_name, code_of, describe
from ._errors import (ArgumentTypeError, BufferFreed, ClientClosed, Error, InvalidArgument, Status,
                      error_for)
from ._lib import (ARG_ARRAY, ARG_BOOL, ARG_BUFFER, ARG_F64, ARG_I64, ARG_TEXT, Arg, Array,
                   BufferInfo, DaemonStatus, Options, Output, Result, RunInfo, lib)

# Inputs up to this many bytes in all (outside host regions) travel with the
# run request and the outputs come back in its reply (gpud_call), as gpuctl
# does; bigger ones are uploaded first (over ipc:// through shared memory).
ONE_TRIP_MAX = 1 << 20
MAX_OUTPUTS = 16  # KERNEL_MAX_PARAMS: no kernel has more outputs
STAGE_MIN = 1 << 20  # arrays this big go through staging host memory (see _staging)
_MAX_DIM = (1 << 62) - 1  # elements in one dimension of alloc's and empty's shapes

_byref = ctypes.byref
_NAMES = {}
# gpud_status_scope: what a status covers, by who asked
_SCOPES = {0: "all", 1: "tenant", 2: "before_hello"}


def _name(s):
    b = _NAMES.get(s)
    if b is None:
        if not isinstance(s, str):
            raise ArgumentTypeError("argument names are strings, got %s" % describe(s))
        b = _NAMES[s] = s.encode()
    return b


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


def _wrap_result(ga):
    """A gpud_call result (malloc'd by the library) as a numpy array."""
    return _fast.result_array(ga.data, ga.nbytes, NUMPY[ga.dtype], tuple(ga.shape[:ga.ndim]))


def _scalar(v, what):
    """(kind, value) of a scalar argument; ArgumentTypeError for what is not one."""
    t = type(v)
    if t is bool or isinstance(v, np.bool_):
        return ARG_BOOL, bool(v)
    if t is int or isinstance(v, np.integer):
        iv = int(v)
        if not _dtypes.INT64_MIN <= iv <= _dtypes.INT64_MAX:
            raise ArgumentTypeError("%s: expected an integer within int64, got %d" % (what, iv))
        return ARG_I64, iv
    if t is float or isinstance(v, np.floating):
        fv = float(v)
        if t is not float and v.dtype.itemsize > 8 and not (fv == v or fv != fv):
            raise ArgumentTypeError("%s: expected a float64 number, got %s, which float64 "
                                    "cannot hold exactly" % (what, describe(v)))
        return ARG_F64, fv
    if t is str:
        return ARG_TEXT, v.encode()
    if isinstance(v, np.ndarray) and v.ndim == 0:
        if code_of(v.dtype) or v.dtype.kind == "b":
            return _scalar(v[()], what)
        raise ArgumentTypeError("%s: expected a number, got %s" % (what, describe(v)))
    if isinstance(v, (np.dtype, type)):
        return ARG_TEXT, as_dtype_name(v, what).encode()
    raise ArgumentTypeError("%s: expected a bool, int, float or dtype name, got %s"
                            % (what, describe(v)))


class ServerInfo:
    """What gpud said about itself in hello (gpud_server_info)."""

    def __init__(self, s):
        self.version = s.version.decode()
        self.protocol_version = s.protocol_version
        self.backend = s.backend.decode()
        self.max_message_size = s.max_message_size
        self.connection = s.connection
        self.tenant = s.tenant.decode()
        self.instance = s.instance
        self.devices = [{"index": d.index, "name": d.name.decode(), "cc": (d.cc_major, d.cc_minor),
                         "memory_total": d.memory_total, "memory_free": d.memory_free,
                         "sm_count": d.sm_count, "lost": bool(d.lost)}
                        for d in s.devices[:s.ndevices]]

    def __repr__(self):
        return "ServerInfo(version=%r, backend=%r, tenant=%r, devices=%d)" % (
            self.version, self.backend, self.tenant, len(self.devices))


class Buffer:
    """An array in gpud (device memory on the cuda backend), by handle.

    Pass it as a kernel argument (input or output) so data stays in gpud
    across calls. ``get()``/``download()`` fetch it as a numpy array,
    ``set(a)`` overwrites it, ``free()`` (or the end of a ``with`` block, or
    garbage collection) frees it, and closing its client frees it in gpud
    too. A kept buffer (``upload(a, keep=True)``) belongs to the tenant and
    outlives the connection; only free() removes it.
    """

    __slots__ = ("_client", "_handle", "shape", "dtype", "nbytes", "kept", "_owned")

    def __init__(self, client: Client, handle: int, dtype: np.dtype, shape: Tuple[int, ...],
                 owned: bool = True, kept: bool = False) -> None:
        self._client = client
        self._handle = handle
        self.dtype = dtype
        self.shape = shape
        n = dtype.itemsize
        for d in shape:
            n *= d
        self.nbytes = n
        self.kept = kept
        self._owned = owned and not kept

    @property
    def handle(self) -> int:
        """gpud's handle (an int), as gpuctl prints it in hex."""
        if self._handle is None:
            raise BufferFreed("this gpud.Buffer was freed")
        return self._handle

    @property
    def client(self) -> Client:
        return self._client

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return self.nbytes // self.dtype.itemsize

    def get(self) -> np.ndarray:
        """The buffer's contents as a new numpy array."""
        return self._client._download(self)

    download = get

    def __array__(self, dtype=None, copy=None):
        a = self.get()
        return a if dtype is None else a.astype(dtype, copy=False)

    def set(self, a: Any) -> None:
        """Overwrites the buffer with a (same dtype and number of elements)."""
        self._client._set(self, a)

    def free(self) -> None:
        """Frees the buffer in gpud now (a second free does nothing)."""
        h = self._handle
        if h is None:
            return
        self._client._free_now(h)
        self._handle = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if self._handle is not None and not self._client.closed:
            self.free()

    def __del__(self):
        h = getattr(self, "_handle", None)
        if h is not None and self._owned:
            c = self._client
            if not c._closed:
                c._dead.append(h)

    def __len__(self):
        if not self.shape:
            raise TypeError("len() of a 0-d gpud.Buffer")
        return self.shape[0]

    def __repr__(self):
        if self._handle is None:
            return "<gpud.Buffer freed>"
        return "<gpud.Buffer %016x %s %s%s>" % (self._handle, self.dtype, self.shape,
                                               " kept" if self.kept else "")


class Client:
    """One connection to gpud: see gpud.connect()."""

    def __init__(self, url: Optional[str] = None, token: Optional[str] = None,
                 timeout: Optional[float] = None, connect_timeout: Optional[float] = None) -> None:
        self._c = None
        self._closed = True
        self._lock = threading.Lock()  # _closed and _active: held for a few bytecodes only
        self._idle = threading.Event()  # set when close() may go on (no call in flight)
        self._mu = threading.RLock()    # host memory bookkeeping (RLock: __del__ may run inside)
        self._active = 0
        self._dead = []        # handles of Buffers collected by the GC, freed by the next call
        self._hosts = {}       # ptr -> nbytes of live host memory
        self._dead_hosts = []  # host memory whose arrays are gone, given back by the next call
        self._owned = set()    # handles this client made and has not freed (for close)
        self._kernels = None
        self._plans = {}       # (kernel, arg names...) -> _fast.Plan of a warm one-trip run
        self._stage = None     # (address, bytes) of the staging host memory
        self._stage_lock = threading.Lock()
        self._keep_client = None
        self._c_close_pending = False
        self.k = _kernels.KernelNamespace(self)
        self._connect_args = (url, token, timeout, connect_timeout)
        opts = Options()
        keep = []
        for field, v in (("url", url), ("token", token)):
            if v is not None:
                if not isinstance(v, str):
                    raise ArgumentTypeError("connect: %s must be a str, got %s"
                                            % (field, describe(v)))
                b = v.encode()
                keep.append(b)
                setattr(opts, field, b)
        opts.timeout_ms = self._ms(timeout, "timeout")
        opts.connect_timeout_ms = self._ms(connect_timeout if connect_timeout is not None
                                           else timeout, "connect_timeout")
        c = ctypes.c_void_p()
        st = lib.gpud_connect_opts(_byref(opts), _byref(c))
        if st != 0:
            msg = lib.gpud_errmsg(c) if c else None
            msg = msg.decode("utf-8", "replace") if msg else lib.gpud_strerror(st).decode()
            if c:
                lib.gpud_close(c)
            raise error_for(st, msg)
        self._c = c
        self._closed = False
        self._server = ServerInfo(lib.gpud_server(c).contents)
        self._shm = bool(lib.gpud_has_shm(c))

    @staticmethod
    def _ms(t, what):
        if t is None:
            return 0
        if isinstance(t, bool) or not isinstance(t, (int, float)) or not t > 0:
            raise ArgumentTypeError("connect: %s must be a positive number of seconds or None, "
                                    "got %s" % (what, describe(t)))
        return max(1, min(int(t * 1000), 2 ** 31 - 1))

    # --- the guard around every call --------------------------------------------------

    def _enter(self):
        lk = self._lock
        lk.acquire()
        if self._closed:
            lk.release()
            raise ClientClosed("the gpud client is closed (%s)" % self.url)
        self._active += 1
        lk.release()
        if self._dead or self._dead_hosts:
            self._flush_dead()
        return self._c

    def _leave(self):
        lk = self._lock
        lk.acquire()
        self._active -= 1
        idle = self._closed and self._active == 0
        lk.release()
        if idle:
            self._idle.set()

    def _fail(self, st):
        msg = lib.gpud_errmsg(self._c)
        raise error_for(st, msg.decode("utf-8", "replace") if msg else
                        lib.gpud_strerror(st).decode())

    def _flush_dead(self):
        with self._mu:
            dead, self._dead = self._dead, []
            hosts, self._dead_hosts = self._dead_hosts, []
        if dead:
            self._owned.difference_update(dead)
            hs = (ctypes.c_uint64 * len(dead))(*dead)
            lib.gpud_free(self._c, hs, len(dead))  # a buffer already gone is no loss
        for p in hosts:
            lib.gpud_host_free(self._c, p)

    # --- the connection ---------------------------------------------------------------

    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def url(self) -> str:
        return lib.gpud_url(self._c).decode() if self._c else "(closed)"

    @property
    def server(self) -> ServerInfo:
        """ServerInfo: version, backend, tenant, devices, max_message_size, instance."""
        return self._server

    @property
    def backend(self) -> str:
        return self._server.backend

    @property
    def has_shm(self) -> bool:
        """True if this connection shares host memory with gpud (ipc://)."""
        return self._shm

    @property
    def reconnects(self) -> int:
        """How many times the client re-established its session (gpud restarted)."""
        return lib.gpud_reconnects(self._c) if self._c else 0

    def set_timeout(self, seconds: Optional[float]) -> None:
        """Per-call timeout in seconds for later calls (None: wait as long as it takes)."""
        c = self._enter()
        try:
            lib.gpud_set_timeout(c, self._ms(seconds, "timeout"))
        finally:
            self._leave()

    def set_device(self, device: Optional[int]) -> None:
        """Later uploads and runs of this client go to gpud's device ``device``
        (``server.devices[i]["index"]``; uploads are pinned there, runs' inputs on
        other devices copied to it). None (the default) lets gpud place them:
        a run where its buffers are, fresh work where the tenant's buffers are,
        else on the least-loaded device. A device gpud lacks is an
        InvalidArgument of the call that names it."""
        if device is not None and (isinstance(device, bool) or not isinstance(device, int)
                                   or device < 0):
            raise ArgumentTypeError(
                "set_device: expected a device index (an int >= 0) or None, got %r"
                % (device,))
        c = self._enter()
        try:
            lib.gpud_set_device(c, -1 if device is None else device)
        finally:
            self._leave()

    def close(self) -> None:
        """Closes the connection: gpud frees every buffer it made (kept ones stay).

        Waits for calls in flight on other threads. Host memory from empty()
        or asarray() stays valid while arrays refer to it; the connection is
        closed when the last of them goes. A second close does nothing.
        """
        with self._lock:
            if self._closed:
                return
            self._closed = True
            busy = self._active > 0
        if busy:
            self._idle.wait()
        kc, self._keep_client = self._keep_client, None
        if kc is not None:
            kc.close()
        with self._mu:
            if self._hosts:
                # Numpy arrays still use gpud_host_alloc memory: the connection stays until
                # they go (_host_gone closes it), but nothing else of it does.
                self._dead_hosts_flush_locked()
                if self._owned:
                    hs = (ctypes.c_uint64 * len(self._owned))(*self._owned)
                    lib.gpud_free(self._c, hs, len(self._owned))
                    self._owned.clear()
                self._c_close_pending = True
                return
        self._close_c()

    def _dead_hosts_flush_locked(self):
        hosts, self._dead_hosts = self._dead_hosts, []
        for p in hosts:
            lib.gpud_host_free(self._c, p)

    def _close_c(self):
        c, self._c = self._c, None
        if c:
            lib.gpud_close(c)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        if getattr(self, "_c", None) and not self._closed:
            self.close()

    def __repr__(self):
        if self._closed:
            return "<gpud.Client closed>"
        return "<gpud.Client %s backend=%s tenant=%s>" % (self.url, self.backend,
                                                          self._server.tenant)

    # --- kernels ------------------------------------------------------------------------

    def _kernel_table(self, refresh=False):
        t = self._kernels
        if t is None or refresh:
            c = self._enter()
            try:
                st, t = _kernels.fetch(c)
                if st != 0:
                    self._fail(st)
            finally:
                self._leave()
            self._kernels = t
        return t

    def _kernel(self, name):
        """The Kernel of that name, asking gpud again if it is not known yet; None if none."""
        t = self._kernels
        k = t.get(name) if t is not None else None
        if k is None:
            k = self._kernel_table(refresh=True).get(name)
        return k

    @property
    def kernels(self) -> Dict[str, _kernels.Kernel]:
        """Every kernel gpud has for this client, {name: gpud.Kernel}, as gpud lists it now."""
        return dict(self._kernel_table(refresh=True))

    def unregister(self, name: str) -> None:
        """Removes this tenant's custom kernel name from gpud."""
        c = self._enter()
        try:
            st = lib.gpud_unregister(c, _name(name))
            if st != 0:
                self._fail(st)
        finally:
            self._leave()
        if self._kernels is not None:
            self._kernels.pop(name, None)

    def _register(self, spec, keep):
        c = self._enter()
        try:
            st = lib.gpud_register(c, _byref(spec))
            if st != 0:
                self._fail(st)
        finally:
            self._leave()
        self._kernels = None

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
        url, token, timeout, cto = self._connect_args
        kc = Client(url=lib.gpud_url(self._c).decode(), token=token, timeout=timeout,
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

    def sync(self) -> None:
        """Returns once everything this client queued has completed in gpud."""
        c = self._enter()
        try:
            st = lib.gpud_sync(c)
            if st != 0:
                self._fail(st)
        finally:
            self._leave()

    def status(self) -> Dict[str, Any]:
        """gpud's status (gpuctl status) as a dict; 'sessions' lists the connections.

        What it covers depends on who asks ('scope'): "tenant", the client's
        tenant ('tenant') sees its own connections, buffers and requests
        (other tenants' sessions are not shown); "all", a tenant in gpud's
        admin_tenants sees every tenant's.
        """
        s = DaemonStatus()
        c = self._enter()
        try:
            st = lib.gpud_status_get(c, _byref(s))
            if st != 0:
                self._fail(st)
        finally:
            self._leave()
        out = {f: getattr(s, f) for f in (
            "uptime_s", "requests", "errors", "cancelled", "cancelled_closed", "connections",
            "in_flight", "buffers", "bytes_in_use", "bytes_high_water")}
        if s.has_pool:
            out["pool"] = {f[5:]: getattr(s, f) for f in (
                "pool_in_use", "pool_cached", "pool_high_water", "pool_limit", "pool_allocs",
                "pool_hits")}
        if s.has_lending:
            out["lending"] = {f[5:]: getattr(s, f) for f in (
                "lend_spare_bytes", "lend_kept_bytes", "lend_lent_bytes", "lend_from_kept",
                "lend_from_spare", "lend_made")}
        if s.has_host_memory:
            out["host_memory"] = {f[5:]: getattr(s, f) for f in (
                "host_used", "host_limit", "host_high_water", "host_refused", "host_buffers",
                "host_lent", "host_pinned", "host_staging", "host_messages", "host_rings")}
        out["server"] = ServerInfo(s.server)
        out["scope"] = _SCOPES.get(s.scope, "unknown")
        out["tenant"] = s.tenant.decode()
        out["degraded"] = bool(s.degraded)
        # each device: gpud's use of it (runs in flight, busy seconds, its pool)
        out["devices"] = [{"index": d.index, "lost": bool(d.lost),
                           "lost_message": d.lost_message.decode(), "runs": d.runs,
                           "slots": d.slots, "runs_total": d.runs_total, "busy_s": d.busy_s,
                           "bytes_moving": d.bytes_moving, "buffers": d.buffers,
                           "bytes_in_use": d.bytes_in_use}
                          for d in s.server.devices[:s.server.ndevices]]
        out["sessions"] = [{"id": x.id, "peer": x.peer.decode(), "buffers": x.buffers,
                            "bytes": x.bytes, "requests": x.requests, "in_flight": x.in_flight,
                            "regions": x.regions, "region_bytes": x.region_bytes,
                            "tenant": x.tenant.decode()}
                           for x in s.sessions[:s.nsessions]]
        return out

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

    # --- running kernels ----------------------------------------------------------------

    def run(self, kernel: str, /, **args: Any) -> Union[np.ndarray, Buffer, Dict[str, Any]]:
        """Runs a kernel of gpud and returns its output(s) as numpy arrays.

        Arguments by name, as ``client.kernels[kernel]`` lists them:
        - arrays: numpy arrays (or lists, or any array-like) of float32,
          float64, int32 or int64; non-contiguous and byte-swapped arrays are
          converted first; any other dtype raises ArgumentTypeError (a
          TypeError) naming the argument, what it takes and what it got;
        - gpud.Buffer objects: data already in gpud, not copied;
        - scalars: bool, int (int64), float, and dtypes by name ("float32",
          numpy.float32); None leaves an optional argument out.
        - outputs: by their name, or ``out=`` for a kernel's one output (a
          dict for several): a gpud.Buffer is written in gpud and returned
          as it is; a numpy array receives the result.
        Returns one numpy array, or a dict {name: array} for several
        outputs. Inputs up to 1 MiB in all (not counting arrays in host
        memory from empty()/asarray(), which go by reference) go with the
        request and the outputs come back in its reply: one round trip.
        """
        plan = self._plans.pop((kernel, *args), None) if type(kernel) is str else None
        if plan is not None:
            try:
                r = plan.run(self, args)
            finally:
                self._plans[(kernel, *args)] = plan
            if r is not _fast.MISS:
                return r
        return self._run(kernel, args, True)

    def run_buffers(self, kernel: str, /, **args: Any) -> Union[Buffer, Dict[str, Buffer]]:
        """As run(), but the outputs stay in gpud: gpud.Buffer objects (a dict for several)."""
        return self._run(kernel, args, False)

    def _run(self, kernel, args, download):
        if not isinstance(kernel, str):
            raise ArgumentTypeError("run: the kernel is named by a str, got %s"
                                    % describe(kernel))
        k = self._kernels.get(kernel) if self._kernels is not None else None
        if k is None and not self._closed:
            k = self._kernel(kernel)
        if "out" in args and (k is None or "out" not in k.by_name):
            args = self._map_out(kernel, k, args)
        c = self._enter()
        try:
            return self._run_on(c, kernel, k, args, download)
        finally:
            self._leave()

    @staticmethod
    def _map_out(kernel, k, args):
        args = dict(args)
        out = args.pop("out")
        if out is None:
            return args
        if isinstance(out, dict):
            args.update(out)
        elif k is not None and len(k.outputs) == 1:
            args[k.outputs[0]] = out
        else:
            raise InvalidArgument(
                "run %s: out= names the kernel's one output, but it has %s; pass a dict "
                "{name: Buffer} or each output by name" % (
                    kernel, "outputs " + ", ".join(k.outputs) if k else "no known outputs"))
        return args

    def _run_on(self, c, kernel, k, args, download):
        n = len(args)
        argv = (Arg * max(n, 1))()
        keep = []            # what the C call points to
        arrays = []          # (index, ndarray, code, in host memory)
        given_out = {}       # output name -> Buffer passed in
        np_out = {}          # output name -> numpy array to fill
        inline = 0
        params = k.by_name if k is not None else {}
        i = 0
        for name, v in args.items():
            p = params.get(name)
            what = "argument '%s'" % name
            if v is None:
                if p is not None and not p.optional:
                    raise ArgumentTypeError("run %s: %s is required, got None" % (kernel, what))
                continue
            ca = argv[i]
            ca.name = _name(name)
            if isinstance(v, Buffer):
                ca.kind = ARG_BUFFER
                ca.v.buffer = v.handle
                if p is not None and p.role == "out":
                    given_out[name] = v
            elif p is not None and p.role == "out" and isinstance(v, np.ndarray):
                np_out[name] = v
                continue
            elif (p is not None and p.role == "scalar") or isinstance(
                    v, (bool, int, float, str, np.generic, np.dtype, type)):
                if isinstance(v, np.ndarray) and v.ndim > 0:
                    raise ArgumentTypeError("run %s: %s: expected a scalar (%s), got %s" % (
                        kernel, what, p.type or "a number", describe(v)))
                kind, val = _scalar(v, "run %s: %s" % (kernel, what))
                ca.kind = kind
                if kind == ARG_F64:
                    ca.v.f64 = val
                elif kind == ARG_I64:
                    ca.v.i64 = val
                elif kind == ARG_BOOL:
                    ca.v.b = val
                else:
                    keep.append(val)
                    ca.v.text = val
            else:
                a, code = as_array(v, "run %s: %s" % (kernel, what), p.mask if p else 0)
                inhost = self._in_host_memory(a)
                if not inhost:
                    inline += a.nbytes
                arrays.append((i, a, code, inhost))
            i += 1
        n = i
        one_trip = download and not given_out and (
            inline <= ONE_TRIP_MAX or (not self._shm and inline <= self._server.max_message_size))
        if one_trip:
            res = self._call(c, kernel, k, argv, n, arrays, keep)
            if res is not None:
                if not np_out and k is not None and n == len(args):
                    self._plan_for(kernel, k, args, argv, arrays, len(res))
                return self._outputs(kernel, res, np_out)
        return self._run_buffers(c, kernel, k, argv, n, arrays, given_out, np_out, download)

    def _plan_for(self, kernel, k, args, argv, arrays, nout):
        """Keeps a _fast.Plan for later runs like this one, if its arguments allow one."""
        key = (kernel, *args)
        if key in self._plans or len(self._plans) >= 64:
            return
        dts = {i: a.dtype for i, a, _, _ in arrays}
        items = []
        for i, name in enumerate(args):
            kind = argv[i].kind
            v = args[name]
            if kind == ARG_ARRAY:
                if type(v) is not np.ndarray or v.dtype is not dts[i] or v is not \
                        [a for j, a, _, _ in arrays if j == i][0]:
                    return  # converted on the way: the fast path would take it as it is
            elif kind not in (ARG_F64, ARG_I64, ARG_BOOL) or type(v) not in (float, int, bool):
                return
            items.append((name, kind, dts.get(i)))
        limit = ONE_TRIP_MAX if self._shm else self._server.max_message_size
        self._plans[key] = _fast.Plan(kernel, items, nout, limit)

    def _call(self, c, kernel, k, argv, n, arrays, keep):
        for i, a, code, _ in arrays:
            ga = Array()
            ga.dtype = code
            ga.ndim = a.ndim
            for d, s in enumerate(a.shape):
                ga.shape[d] = s
            ga.data = a.ctypes.data if a.nbytes else None
            ga.nbytes = a.nbytes
            keep.append(ga)
            argv[i].kind = ARG_ARRAY
            argv[i].v.array = ctypes.pointer(ga)
        cap = len(k.outputs) if k is not None else MAX_OUTPUTS
        res = (Result * max(cap, 1))()
        nout = ctypes.c_size_t()
        st = lib.gpud_call(c, _name(kernel), argv, n, res, cap, _byref(nout), None)
        if st != 0:
            if st == Status.E2BIG:  # outputs too big for one reply: run on buffers instead
                return None
            self._fail(st)
        return [(res[j].name.decode(), _wrap_result(res[j].array)) for j in range(nout.value)]

    def _run_buffers(self, c, kernel, k, argv, n, arrays, given_out, np_out, download):
        temps = []
        ok = False
        try:
            for i, a, code, _ in arrays:
                h = self._alloc_raw(c, code, a, kernel)
                temps.append(h)
                argv[i].kind = ARG_BUFFER
                argv[i].v.buffer = h
            cap = MAX_OUTPUTS
            outs = (Output * cap)()
            nout = ctypes.c_size_t()
            st = lib.gpud_run(c, _name(kernel), argv, n, outs, cap, _byref(nout), None)
            if st != 0:
                self._fail(st)
            given = {b.handle for b in given_out.values()}
            res = []
            made = []
            for j in range(nout.value):
                o = outs[j]
                name = o.name.decode()
                if o.handle in given:
                    res.append((name, given_out[name]))
                    continue
                made.append(o.handle)
                dt = NUMPY[o.dtype]
                shape = tuple(o.shape[:o.ndim])
                if download:
                    arr = np.empty(shape, dt)
                    try:
                        self._get_into(c, o.handle, arr)
                    except Error:
                        temps.extend(made)
                        made = []
                        raise
                    res.append((name, arr))
                else:
                    res.append((name, Buffer(self, o.handle, dt, shape)))
            if download:
                temps.extend(made)
            else:
                self._owned.update(made)
            ok = True
        finally:
            if temps:
                hs = (ctypes.c_uint64 * len(temps))(*temps)
                st = lib.gpud_free(c, hs, len(temps))
                if ok and st != 0:
                    self._fail(st)
        return self._outputs(kernel, res, np_out)

    @staticmethod
    def _outputs(kernel, res, np_out):
        if np_out:
            for j, (name, arr) in enumerate(res):
                dst = np_out.get(name)
                if dst is None:
                    continue
                if dst.shape != arr.shape or dst.dtype != arr.dtype:
                    raise InvalidArgument(
                        "run %s: output '%s' is %s %s, but the array given for it is %s %s"
                        % (kernel, name, arr.dtype, arr.shape, dst.dtype, dst.shape))
                np.copyto(dst, arr)
                res[j] = (name, dst)
        if len(res) == 1:
            return res[0][1]
        return dict(res)


def connect(url: Optional[str] = None, token: Optional[str] = None, timeout: Optional[float] = None,
            connect_timeout: Optional[float] = None) -> Client:
    """Connects to gpud and says hello; returns a Client (a context manager).

    url: ipc://PATH, tcp://HOST:PORT or tls+tcp://HOST:PORT, or a list of
    them joined by commas (the first that answers; a lost session moves to
    the next that does); None: $GPUD_URL, else ipc:///run/gpud/gpud.sock. token: the tenant's token over tcp://
    (None: $GPUD_TOKEN). timeout: seconds for each call (None: no limit; a
    call that runs out is cancelled in gpud and raises gpud.Timeout), also
    the connect timeout unless connect_timeout is given (default 10 s).
    Raises gpud.Unavailable (a ConnectionError) naming the URL when gpud
    cannot be reached.
    """
    return Client(url, token, timeout, connect_timeout)

