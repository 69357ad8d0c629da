"""gpud — Python client of the gpud GPU compute daemon.

    import gpud
    with gpud.connect() as c:                     # $GPUD_URL, else ipc:///run/gpud/gpud.sock
        pgram = c.run("lombscargle", x=x, y=y, freqs=f)
        pgram = c.k.lombscargle(x, y, f, normalize=True)   # help(c.k.lombscargle)
        buf = c.upload(x)                         # stays in gpud across calls
        a = c.empty((1 << 20,), "float32")        # host memory gpud DMAs from: no copies
        fut = c.submit("sum", x=x)                # a concurrent.futures.Future; fut.result()
        # in a coroutine: total = await c.arun("sum", x=x)

    from gpud.signal import lombscargle           # scipy.signal.lombscargle's signature

A thin layer over libgpud-client (C, through ctypes): the library speaks the
protocol; this package converts numpy arrays and Python values, raises
gpud.Error subclasses, and keeps Buffers and host memory alive as long as
Python refers to them.
"""
from ._errors import (AccessDenied, ArgumentTypeError, BackendError, BufferFreed, Cancelled,
                      ClientClosed, Error, InvalidArgument, NotFound, OutOfMemory,
                      PermissionDenied, ProtocolError, QuotaExceeded, ShuttingDown, StaleHandle,
                      Status, Timeout, Unavailable, Unsupported)
from ._lib import lib as _clib
from ._client import Buffer, Client, ServerInfo, connect
from ._kernels import Kernel, Param
from ._default import default_client, set_default_client
from ._custom import ElementwiseKernel, RawKernel, ReductionKernel

__version__ = _clib.gpud_version().decode()

__all__ = [
    "connect", "Client", "Buffer", "ServerInfo", "Kernel", "Param", "default_client",
    "set_default_client", "ElementwiseKernel", "RawKernel", "ReductionKernel", "Status",
    "Error", "InvalidArgument",
    "ArgumentTypeError", "NotFound", "StaleHandle", "OutOfMemory", "QuotaExceeded",
    "Unavailable", "ShuttingDown", "Timeout", "Cancelled", "AccessDenied", "PermissionDenied",
    "Unsupported", "BackendError", "ProtocolError", "ClientClosed", "BufferFreed",
]
