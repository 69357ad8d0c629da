"""gpud._default — the default client that gpud.signal and the custom kernels use.

Opened on first use with gpud.connect() ($GPUD_URL, $GPUD_TOKEN), shared by
every thread of the process (one lock guards opening it), and closed at
interpreter exit. set_default_client() replaces it, e.g. with a client to a
tcp:// gpud.
"""
from __future__ import annotations

import atexit
import threading

from typing import Optional

from ._client import Client, connect

_lock = threading.Lock()
_client = None


def default_client() -> Client:
    """The process's default gpud.Client, connected on first use (again if it was closed)."""
    global _client
    c = _client
    if c is not None and not c.closed:
        return c
    with _lock:
        if _client is None or _client.closed:
            _client = connect()
        return _client


def set_default_client(client: Optional[Client]) -> Optional[Client]:
    """Makes client the default (None: the next use connects anew); returns the old one."""
    global _client
    from ._client import Client
    if client is not None and not isinstance(client, Client):
        from ._errors import ArgumentTypeError
        raise ArgumentTypeError("set_default_client: expected a gpud.Client or None, got %r"
                                % (client,))
    with _lock:
        old, _client = _client, client
    return old


@atexit.register
def _close_default():
    c = _client
    if c is not None:
        c.close()
