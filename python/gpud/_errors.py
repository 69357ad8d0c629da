"""gpud._errors — the statuses of libgpud-client and the exceptions they raise.

Every failure raises a subclass of gpud.Error that carries ``.status`` (a
gpud.Status) and ``.message``: the daemon's message verbatim for what gpud
refused, the library's own for connection failures, or the package's for
arguments it refuses before anything is sent. Each subclass also derives
from the built-in exception a Python user would catch for that case
(ValueError, KeyError, MemoryError, ConnectionError, TimeoutError, ...).
"""
import enum


class Status(enum.IntEnum):
    """libgpud-client's gpud_status values (include/gpud/client.h)."""

    OK = 0
    EINVAL = 1
    ENOTFOUND = 2
    EUNKNOWN_KERNEL = 3
    ENOMEM = 4
    E2BIG = 5
    EUNSUPPORTED = 6
    EPROTO = 7
    EBACKEND = 8
    ESHUTDOWN = 9
    EINTERNAL = 10
    EQUOTA = 11
    EACCESS = 12
    ESTALE = 13
    ECANCELED = 14
    ENOSESSION = 15
    ECONNECT = 100
    ETRANSPORT = 101
    ETIMEDOUT = 102
    EARG = 103
    EUNAVAILABLE = 104
    EPERM = 105


class Error(Exception):
    """A gpud call failed: ``status`` says how, ``message`` what was wrong."""

    def __init__(self, message, status=Status.EINVAL):
        super().__init__(message)
        self.message = message
        self.status = status

    def __str__(self):
        return self.message

    def __reduce__(self):
        return (type(self), (self.message, self.status))


class InvalidArgument(Error, ValueError):
    """gpud refused an argument: wrong dtype, shape, length or value (EINVAL, EARG, E2BIG)."""


class ArgumentTypeError(Error, TypeError):
    """An argument of a type or dtype gpud does not take, refused before anything is sent."""

    def __init__(self, message, status=Status.EARG):
        super().__init__(message, status)


class NotFound(Error, KeyError):
    """An unknown kernel (EUNKNOWN_KERNEL) or buffer handle (ENOTFOUND)."""


class StaleHandle(NotFound):
    """A handle from before gpud restarted: its buffer is gone (ESTALE)."""


class OutOfMemory(Error, MemoryError):
    """gpud or the device is out of memory (ENOMEM)."""


class QuotaExceeded(OutOfMemory):
    """Over one of the tenant's quotas (EQUOTA); the message names it."""


class Unavailable(Error, ConnectionError):
    """gpud cannot be reached, went away, or is shutting down."""


class ShuttingDown(Unavailable):
    """gpud is shutting down and did not do the call (ESHUTDOWN): it refused it, or
    closed the connection before taking it after saying it was stopping. Nothing is
    retried; call again once gpud is back (a supervisor restarts it)."""


class Timeout(Error, TimeoutError):
    """No reply within the client's timeout (ETIMEDOUT); the request is cancelled in gpud."""


class Cancelled(Error):
    """The job was cancelled (ECANCELED)."""


class AccessDenied(Error, PermissionError):
    """A missing or wrong token, or not an administrator (EACCESS)."""


class PermissionDenied(Error, PermissionError):
    """gpud's ipc:// socket refuses this user (EPERM): the message names the socket, its
    mode, owner and group, and the group to ask to be added to. gpud is running."""


class Unsupported(Error, NotImplementedError):
    """The backend cannot do it, e.g. custom kernels on the cpu backend (EUNSUPPORTED)."""


class BackendError(Error, RuntimeError):
    """The backend failed (a CUDA error) or gpud hit a bug (EBACKEND, EINTERNAL)."""


class ProtocolError(Error):
    """Not gpud at the URL, or a protocol version it does not speak (EPROTO, ENOSESSION)."""


class ClientClosed(Error, ValueError):
    """A call on a Client (or one of its Buffers) after close()."""

    def __init__(self, message="the gpud client is closed", status=Status.EARG):
        super().__init__(message, status)


class BufferFreed(Error, ValueError):
    """A call on a Buffer after free()."""

    def __init__(self, message="the gpud buffer was freed", status=Status.EARG):
        super().__init__(message, status)


_BY_STATUS = {
    Status.EINVAL: InvalidArgument,
    Status.EARG: InvalidArgument,
    Status.E2BIG: InvalidArgument,
    Status.ENOTFOUND: NotFound,
    Status.EUNKNOWN_KERNEL: NotFound,
    Status.ESTALE: StaleHandle,
    Status.ENOMEM: OutOfMemory,
    Status.EQUOTA: QuotaExceeded,
    Status.ECONNECT: Unavailable,
    Status.ETRANSPORT: Unavailable,
    Status.EUNAVAILABLE: Unavailable,
    Status.ESHUTDOWN: ShuttingDown,
    Status.ETIMEDOUT: Timeout,
    Status.ECANCELED: Cancelled,
    Status.EACCESS: AccessDenied,
    Status.EPERM: PermissionDenied,
    Status.EUNSUPPORTED: Unsupported,
    Status.EBACKEND: BackendError,
    Status.EINTERNAL: BackendError,
    Status.EPROTO: ProtocolError,
    Status.ENOSESSION: ProtocolError,
}


def error_for(status, message):
    """The exception for a gpud_status and its message."""
    try:
        st = Status(status)
    except ValueError:  # a status newer than this package: still an Error
        return Error("%s (status %d)" % (message, status), status)
    return _BY_STATUS.get(st, Error)(message, st)
