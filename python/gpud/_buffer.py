"""gpud._buffer — Buffer (an array that lives in gpud, by handle) and ServerInfo
(what gpud said about itself in hello).

Owners: a Buffer belongs to its Client and goes through it for every call;
collected by the GC, its handle is queued on the client (``_dead``) and freed
by the client's next call or close. See gpud._client for the threads.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Tuple

import numpy as np

from ._errors import BufferFreed

if TYPE_CHECKING:
    from ._client import Client


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
