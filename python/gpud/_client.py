"""gpud._client — Client (one connection to gpud, its session and kernels) and connect().

The connection and its session live here; the Client's other methods come
from its bases by concern: gpud._transfer (uploads, downloads, buffers, host
memory) and gpud._run (kernel runs); Buffer and ServerInfo are in
gpud._buffer. Every name this module had is still importable from it.

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

import collections
import ctypes
import threading
import time
from typing import Any, Dict, Optional

from . import _kernels
from ._async import Jobs
from ._buffer import Buffer, ServerInfo
from ._dtypes import describe
from ._errors import ArgumentTypeError, ClientClosed, Status, error_for
from ._lib import DaemonStatus, Options, lib
from ._run import MAX_OUTPUTS, ONE_TRIP_MAX, Runs, _name, _scalar, _wrap_result
from ._transfer import _MAX_DIM, STAGE_MIN, Transfers, _HostMemory

# what moved to gpud._buffer, gpud._run and gpud._transfer, importable from here as before
_MOVED = (Buffer, ServerInfo, MAX_OUTPUTS, ONE_TRIP_MAX, STAGE_MIN, _HostMemory, _MAX_DIM, _name,
          _scalar, _wrap_result)

_byref = ctypes.byref
# gpud_status_scope: what a status covers, by who asked
_SCOPES = {0: "all", 1: "tenant", 2: "before_hello"}


# a failed connect that means gpud is not (yet) there: connect(wait=) tries again
_ABSENT = (Status.ECONNECT, Status.ETRANSPORT, Status.EUNAVAILABLE, Status.ESHUTDOWN)
_RETRY_MIN_S, _RETRY_MAX_S = 0.02, 0.2  # connect(wait=): pause between tries, doubling


def _try_connect(opts, c):
    """One gpud_connect_opts (a seam for tests that watch connect(wait=) retry)."""
    return lib.gpud_connect_opts(_byref(opts), _byref(c))


class Client(Transfers, Runs, Jobs):
    """One connection to gpud: see gpud.connect()."""

    def __init__(self, url: Optional[str] = None, token: Optional[str] = None,
                 timeout: Optional[float] = None, connect_timeout: Optional[float] = None,
                 wait: Optional[float] = None) -> None:
        self._c = None
        self._url = None       # the URL connected to, kept after close() for messages
        self._jobs = {}        # id -> gpud._async._Job in flight (under _lock)
        self._job_pool = None  # the jobs' completion pool, made by the first job
        self._jobs_out = 0     # jobs sent and not yet finished (under _lock)
        self._backlog = collections.deque()  # jobs waiting for one of those to end
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
        if wait is not None and (isinstance(wait, bool) or not isinstance(wait, (int, float))
                                 or not wait >= 0):
            raise ArgumentTypeError("connect: wait must be a number of seconds >= 0 or None, "
                                    "got %s" % describe(wait))
        deadline = time.monotonic() + (wait or 0)
        pause = _RETRY_MIN_S
        while True:
            c = ctypes.c_void_p()
            st = _try_connect(opts, c)
            if st == 0:
                break
            msg = lib.gpud_errmsg(c) if c else None
            msg = msg.decode("utf-8", "replace") if msg else lib.gpud_strerror(st).decode()
            if c:
                lib.gpud_close(c)
            left = deadline - time.monotonic()
            # Only an absent gpud is waited for (as gpuctl status --wait): a refusal is final.
            if st not in _ABSENT or left <= 0:
                if wait and st in _ABSENT:
                    msg += " (gave up waiting after %g s)" % wait
                raise error_for(st, msg)
            time.sleep(min(pause, left))
            pause = min(pause * 2, _RETRY_MAX_S)
        self._c = c
        self._url = lib.gpud_url(c).decode()
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
            # _url, not url: the library's client may be going on another thread
            raise ClientClosed("the gpud client is closed (it was connected to %s)" % self._url
                               if self._url else "the gpud client is closed")
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
        """The URL gpud answered at (after close(), the one it had)."""
        # Asked of the library only while open: close() sets _closed under the lock
        # before anything frees the client, so it cannot go during the call.
        with self._lock:
            if not self._closed and self._c:
                return lib.gpud_url(self._c).decode()
        return self._url or ""

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

        Waits for calls in flight on other threads. Jobs still in flight
        (submit, arun) end: their futures with gpud.ClientClosed. Host memory from empty()
        or asarray() stays valid while arrays refer to it; the connection is
        closed when the last of them goes. A second close does nothing.
        """
        with self._lock:
            if self._closed:
                return
            if self._c:  # where it is now (after failovers): url's answer from here on
                self._url = lib.gpud_url(self._c).decode()
            self._closed = True
            busy = self._active > 0
        if busy:
            self._idle.wait()
        url = self.url
        self._jobs_abandon(None, url)
        with self._mu:
            hosts = bool(self._hosts)
        if hosts:
            # the connection outlives close() (below): cancel and free the jobs on it now
            self._jobs_close(url)
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
        self._jobs_close(url)  # gpud_close ended them

    def _dead_hosts_flush_locked(self):
        hosts, self._dead_hosts = self._dead_hosts, []
        for p in hosts:
            lib.gpud_host_free(self._c, p)

    def _close_c(self):
        if self._c:
            self._url = lib.gpud_url(self._c).decode()  # where it was last (after failovers)
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

    def _register(self, spec, keep, flags=0):
        c = self._enter()
        try:
            st = getattr(lib, spec.register_fn)(c, _byref(spec), flags)
            if st != 0:
                self._fail(st)
        finally:
            self._leave()
        self._kernels = None

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



def connect(url: Optional[str] = None, token: Optional[str] = None, timeout: Optional[float] = None,
            connect_timeout: Optional[float] = None, wait: Optional[float] = None) -> Client:
    """Connects to gpud and says hello; returns a Client (a context manager).

    url: ipc://PATH, tcp://HOST:PORT or tls+tcp://HOST:PORT, or a list of
    them joined by commas (the first that answers; a lost session moves to
    the next that does); None: $GPUD_URL, else ipc:///run/gpud/gpud.sock. token: the tenant's token over tcp://
    (None: $GPUD_TOKEN). timeout: seconds for each call (None: no limit; a
    call that runs out is cancelled in gpud and raises gpud.Timeout), also
    the connect timeout unless connect_timeout is given (default 10 s).
    Raises gpud.Unavailable (a ConnectionError) naming the URL when gpud
    cannot be reached.

    wait: seconds to wait for gpud to come up (as ``gpuctl status --wait``):
    while gpud is not there (nothing listens, or it is shutting down), try
    again, pausing 20 ms doubling to 200 ms between tries, until it answers
    or the time is over; then raise what a failed connect raises, its
    message ending "(gave up waiting after N s)". A refusal (a bad token,
    not gpud at the URL) is raised at once. None or 0: one try.
    """
    return Client(url, token, timeout, connect_timeout, wait)
