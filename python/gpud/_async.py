"""gpud._async — the Client's asynchronous runs: submit() (a concurrent.futures.Future)
and arun() (asyncio), over libgpud-client's jobs (gpud_call_async, gpud_run_async).

How a job goes:
  1. submit() converts the arguments as run() does, on the caller's thread,
     and sends the request: inputs up to 1 MiB in all go with it
     (gpud_call_async; the library copies them before it returns, arrays in
     host memory are read by gpud while the job runs); bigger ones, and
     outputs given as Buffers, are uploaded first, synchronously, then the
     run goes as gpud_run_async. It returns at once with a JobFuture; no
     thread waits for the job. At most MAX_JOBS_IN_FLIGHT of a client's jobs
     are in gpud at once; more wait in the client's backlog, sent in order by
     the pool as jobs end.
  2. When the job ends, the library calls _job_ended on one of its own
     threads (nng's). It only marks the future running and hands the job to
     the client's completion pool (two threads), so the library's network
     thread is held for a few bytecodes.
  3. A pool thread takes the outputs (gpud_job_results: already in the
     reply; gpud_job_outputs: downloads them from gpud, then frees them and
     the uploaded inputs), sets the future's result or exception, and
     frees the job (gpud_job_free).

Owners: a _Job belongs to its client's ``_jobs`` (under the client's
``_lock``) from before its request is sent until it is freed; its C job
pointer (``ptr``) is taken and freed under the job's own ``lock``, by the
pool or by close(), whichever comes first. The C callback is called by
library threads and finds its job in ``_JOBS`` by the integer it was given.
The pool uses the connection only inside _enter/_leave, so close() waits
for it; close() ends the futures still pending with gpud.ClientClosed
and frees the jobs it finds (after gpud_close, which ends them).
"""
from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import ctypes
import itertools
import threading
from typing import Any, Dict, Union

import numpy as np

from ._buffer import Buffer
from ._dtypes import NUMPY, describe
from ._errors import ArgumentTypeError, ClientClosed, Error, Status, error_for
from ._lib import ARG_BUFFER, JobFn, Output, Result, lib
from ._run import MAX_OUTPUTS, ONE_TRIP_MAX, _name, _wrap_result

_byref = ctypes.byref
_JOBS: Dict[int, "_Job"] = {}  # id -> job in flight, for the C callback
_ids = itertools.count(1)
_PENDING = concurrent.futures._base.PENDING
POOL_THREADS = 2  # each client's completion pool
# Jobs of one client in gpud at once; more wait in the client (its backlog) and are
# sent as jobs end. gpud limits a tenant's requests in flight (requests_in_flight,
# 64 by default): half of that leaves room for the client's other calls.
MAX_JOBS_IN_FLIGHT = 32


class JobFuture(concurrent.futures.Future):
    """A concurrent.futures.Future of one gpud job (Client.submit).

    cancel() on a job not yet ended cancels it in gpud (gpud_job_cancel) and
    the future ends cancelled at once; once the job has ended (its outputs
    being taken or taken) it returns False, as Future.cancel does for a
    running or done future.
    """

    def __init__(self):
        super().__init__()
        self._gpud_job = None
        self._defer_cancel = False  # arun: the cancel request goes from the pool

    def cancel(self) -> bool:
        if not super().cancel():
            return False
        # CANCELLED_AND_NOTIFIED: done for concurrent.futures.wait/as_completed too
        self.set_running_or_notify_cancel()
        j = self._gpud_job
        if j is not None:
            j.client._cancel_job(j, self._defer_cancel)
        return True


    def _ended(self):
        """The job ended: the future runs (its outputs are being taken), unless it
        was cancelled or has ended already (close())."""
        with self._condition:
            if self._state == _PENDING:
                self.set_running_or_notify_cancel()


class _Job:
    __slots__ = ("id", "client", "fut", "ptr", "lock", "sent", "call", "kernel", "k", "args",
                 "keep", "arrays", "given_out", "np_out", "temps", "argv", "n", "__weakref__")

    def __init__(self, client, fut, kernel, k, args):
        self.id = next(_ids)
        self.client = client
        self.fut = fut
        self.ptr = None
        self.lock = threading.Lock()
        self.sent = threading.Event()  # set once gpud_*_async returned (ptr is set)
        self.call = True
        self.kernel = kernel
        self.k = k
        self.args = args  # the caller's values: alive until the job ends
        self.keep = None
        self.arrays = None
        self.given_out = None
        self.np_out = None
        self.temps = []   # inputs uploaded for the job, freed when it ends
        self.argv = None  # the gpud_arg array, kept until the job is sent
        self.n = 0


def _settle(fn, value):
    """fut.set_result / set_exception, unless the future has already ended."""
    try:
        fn(value)
    except concurrent.futures.InvalidStateError:
        pass


@JobFn
def _job_ended(_ptr, arg):
    """The C library's callback, on a thread of its own: a few bytecodes only."""
    try:
        j = _JOBS.get(arg or 0)
        if j is not None:
            j.client._job_ended(j)
    except BaseException:  # nothing may escape into the C library's thread
        pass


@atexit.register
def _close_at_exit():
    """Clients with jobs still in flight are closed before the interpreter goes, so
    that no job ends into a callback of a Python that is no longer there."""
    for c in {j.client for j in list(_JOBS.values())}:
        try:
            c.close()
        except Exception:
            pass


def _cancel_result(cf):
    """arun cancelled while its submit ran in the pool: cancel the job it made."""
    if not cf.cancelled() and cf.exception() is None:
        cf.result().cancel()


class Jobs:
    """The Client's asynchronous runs (a base of gpud.Client)."""

    def submit(self, kernel: str, /, **args: Any) -> "concurrent.futures.Future":
        """Runs a kernel asynchronously: a concurrent.futures.Future of what
        ``run(kernel, **args)`` returns (numpy arrays, a dict for several
        outputs, the Buffers given as outputs).

        Returns once the request is sent: any number of jobs may be in flight
        from one thread, and no thread waits for each (at most
        gpud._async.MAX_JOBS_IN_FLIGHT are in gpud at once, the others wait
        in the client, sent in order as jobs end). Arguments are as
        run()'s; inputs up to 1 MiB in all go with the request, bigger ones
        are uploaded before submit returns. Numpy arrays passed in (inputs,
        and ``out=`` arrays, filled when the job ends) are kept referenced
        until the job ends: do not change them meanwhile. Outputs are taken
        when the job ends, by a pool of two threads of the client's; the
        future's done callbacks run there.

        Errors are the exceptions run() raises, set on the future (a bad
        argument fails that future only); future.cancel() cancels the job in
        gpud if it has not ended. close() ends the futures still pending with
        gpud.ClientClosed.
        """
        return self._submit(kernel, args, True)

    async def arun(self, kernel: str, /, **args: Any) -> Union[np.ndarray, Buffer,
                                                              Dict[str, Any]]:
        """``await client.arun(kernel, **args)``: run() for asyncio.

        Returns what run() returns, raises what run() raises. It never blocks
        the event loop: the request is sent from the loop's thread only when
        nothing needs a round trip first (the kernel is known, inputs go with
        the request); otherwise the submission (kernel list, uploads) is made
        by the client's pool. The result comes back through
        loop.call_soon_threadsafe. Cancelling the task cancels the job in
        gpud.
        """
        loop = asyncio.get_running_loop()
        fut = self._submit(kernel, args, False)
        if fut is None:  # something to do before the request: not on the loop
            cf = self._pool().submit(self._submit, kernel, args, True)
            try:
                fut = await asyncio.wrap_future(cf, loop=loop)
            except asyncio.CancelledError:
                cf.add_done_callback(_cancel_result)
                raise
        fut._defer_cancel = True
        return await asyncio.wrap_future(fut, loop=loop)

    # --- submission ---------------------------------------------------------------------

    def _pool(self):
        p = self._job_pool
        if p is None:
            with self._lock:
                p = self._job_pool
                if p is None:
                    p = self._job_pool = concurrent.futures.ThreadPoolExecutor(
                        POOL_THREADS, thread_name_prefix="gpud-jobs")
        return p

    def _submit(self, kernel, args, block):
        """A JobFuture of the run; None if block is False and sending needs round
        trips first (the kernel list, uploads)."""
        fut = JobFuture()
        try:
            if not isinstance(kernel, str):
                raise ArgumentTypeError("run: the kernel is named by a str, got %s"
                                        % describe(kernel))
            k = self._kernels.get(kernel) if self._kernels is not None else None
            if k is None and not self._closed:
                if not block:
                    return None
                k = self._kernel(kernel)
            if "out" in args and (k is None or "out" not in k.by_name):
                args = self._map_out(kernel, k, args)
            c = self._enter()
            try:
                argv, n, keep, arrays, given_out, np_out, inline = self._convert(kernel, k, args)
                one_trip = not given_out and (inline <= ONE_TRIP_MAX or (
                    not self._shm and inline <= self._server.max_message_size))
                if not one_trip and not block:
                    return None
                j = _Job(self, fut, kernel, k, args)
                j.keep, j.arrays, j.given_out, j.np_out = keep, arrays, given_out, np_out
                self._send(c, j, argv, n, one_trip)
            finally:
                self._leave()
        except Error as e:
            fut.set_exception(e)
        return fut

    def _send(self, c, j, argv, n, one_trip):
        """Sends the job now, or queues it in the backlog if MAX_JOBS_IN_FLIGHT are out."""
        if one_trip:
            self._inline(argv, j.arrays, j.keep)
        else:
            j.call = False
            try:
                for i, a, code, _ in j.arrays:
                    h = self._alloc_raw(c, code, a, j.kernel)
                    j.temps.append(h)
                    argv[i].kind = ARG_BUFFER
                    argv[i].v.buffer = h
            except Error:
                self._free_handles(c, j.temps)
                raise
        j.argv, j.n = argv, n
        self._pool()  # there before the job can end
        j.fut._gpud_job = j
        with self._lock:
            self._jobs[j.id] = j
            now = self._jobs_out < MAX_JOBS_IN_FLIGHT and not self._backlog
            if now:
                self._jobs_out += 1
            else:
                self._backlog.append(j)
        if now:
            try:
                self._dispatch(c, j)
            except Error:
                self._pump(c)
                raise

    def _dispatch(self, c, j):
        """Sends job j, counted in _jobs_out; on failure it is forgotten and raised."""
        _JOBS[j.id] = j
        out = ctypes.c_void_p()
        fn = lib.gpud_call_async if j.call else lib.gpud_run_async
        with j.lock:  # a cancel() meanwhile waits for the pointer
            st = fn(c, _name(j.kernel), j.argv, j.n, _job_ended, j.id, _byref(out))
            j.ptr = out.value
            if st == 0 and j.fut.cancelled():  # cancelled as it left the backlog
                lib.gpud_job_cancel(j.ptr)
        j.sent.set()  # the job's end may be handled now
        if st != 0:
            try:
                self._fail(st)  # the message of this thread's call, before gpud_free's
            finally:
                _JOBS.pop(j.id, None)
                with self._lock:
                    self._jobs.pop(j.id, None)
                    self._jobs_out -= 1
                j.fut._gpud_job = None
                self._free_handles(c, j.temps)
        j.argv = None

    def _pump(self, c):
        """Sends jobs of the backlog while fewer than MAX_JOBS_IN_FLIGHT are out."""
        while True:
            with self._lock:
                if self._jobs_out >= MAX_JOBS_IN_FLIGHT or not self._backlog:
                    return
                j = self._backlog.popleft()
                self._jobs_out += 1
            if j.fut.cancelled():  # cancelled while it waited here: never sent
                with self._lock:
                    self._jobs_out -= 1
                    self._jobs.pop(j.id, None)
                self._free_handles(c, j.temps)
                continue
            try:
                self._dispatch(c, j)
            except Error as e:
                _settle(j.fut.set_exception, e)

    @staticmethod
    def _free_handles(c, hs):
        if hs:
            lib.gpud_free(c, (ctypes.c_uint64 * len(hs))(*hs), len(hs))
            del hs[:]

    # --- completion ---------------------------------------------------------------------

    def _job_ended(self, j):
        """On the library's thread: the job ended; the pool takes its outputs."""
        j.fut._ended()
        p = self._job_pool
        if p is not None:
            try:
                p.submit(self._job_finish, j)
            except RuntimeError:  # the pool is shut down: close() frees the job
                pass

    def _job_finish(self, j):
        """In the pool: the job's result or exception on its future, then the job freed."""
        j.sent.wait()
        fut = j.fut
        try:
            if not fut.done():
                _settle(fut.set_result, self._job_result(j))
        except Error as e:
            _settle(fut.set_exception, e)
        except BaseException as e:  # a bug: still the future's, not the pool's
            _settle(fut.set_exception, e)
        finally:
            with self._lock:
                self._jobs_out -= 1
            self._job_free(j)

    def _job_result(self, j):
        st = lib.gpud_job_wait(j.ptr, 0)
        if st == Status.E2BIG and j.call:
            # outputs too big for one reply: run() on buffers, as run() does
            return self._run(j.kernel, j.args, True)
        if st != 0:
            msg = lib.gpud_job_errmsg(j.ptr)
            raise error_for(st, msg.decode("utf-8", "replace") if msg else
                            lib.gpud_strerror(st).decode())
        c = self._enter()
        try:
            if j.call:
                cap = len(j.k.outputs) if j.k is not None else MAX_OUTPUTS
                res = (Result * max(cap, 1))()
                nout = ctypes.c_size_t()
                st = lib.gpud_job_results(j.ptr, res, cap, _byref(nout), None)
                if st != 0:
                    self._fail(st)
                out = [(res[i].name.decode(), _wrap_result(res[i].array))
                       for i in range(nout.value)]
            else:
                out = self._job_downloads(c, j)
        finally:
            self._leave()
        return self._outputs(j.kernel, out, j.np_out)

    def _job_downloads(self, c, j):
        outs = (Output * MAX_OUTPUTS)()
        nout = ctypes.c_size_t()
        st = lib.gpud_job_outputs(j.ptr, outs, MAX_OUTPUTS, _byref(nout), None)
        if st != 0:
            self._fail(st)
        given = {b.handle for b in j.given_out.values()}
        res = []
        made = []
        try:
            for i in range(nout.value):
                o = outs[i]
                if o.handle not in given:
                    made.append(o.handle)
            for i in range(nout.value):
                o = outs[i]
                name = o.name.decode()
                if o.handle in given:
                    res.append((name, j.given_out[name]))
                    continue
                arr = np.empty(tuple(o.shape[:o.ndim]), NUMPY[o.dtype])
                self._get_into(c, o.handle, arr)
                res.append((name, arr))
        finally:
            self._free_handles(c, made)
        return res

    def _job_free(self, j):
        """Frees the job and the inputs uploaded for it; close() does it once closed."""
        try:
            c = self._enter()
        except ClientClosed:
            return
        try:
            with j.lock:
                p, j.ptr = j.ptr, None
                if p:
                    lib.gpud_job_free(p)
                    self._free_handles(c, j.temps)
            self._pump(c)
        finally:
            self._leave()
            self._job_forget(j)

    def _job_forget(self, j):
        if j.ptr is None:
            _JOBS.pop(j.id, None)
            with self._lock:
                self._jobs.pop(j.id, None)
            j.args = j.keep = j.arrays = j.np_out = j.given_out = None

    # --- cancelling ---------------------------------------------------------------------

    def _cancel_job(self, j, defer):
        if defer:
            p = self._job_pool
            if p is not None:
                try:
                    p.submit(self._cancel_job, j, False)
                    return
                except RuntimeError:
                    return  # closing: close() ends the job
        try:
            self._enter()
        except ClientClosed:
            return
        try:
            with j.lock:
                if j.ptr:
                    lib.gpud_job_cancel(j.ptr)  # a failure: the job ends with the connection
        finally:
            self._leave()

    # --- close() ------------------------------------------------------------------------

    def _jobs_abandon(self, jobs, url):
        """close(), first: the futures not ended yet end with ClientClosed."""
        if jobs is None:
            with self._lock:
                jobs = list(self._jobs.values())
        for j in jobs:
            if not j.fut.done():
                _settle(j.fut.set_exception,
                        ClientClosed("the gpud client was closed before the job ended (%s)"
                                     % url))

    def _jobs_close(self, url):
        """close(): pending futures end with ClientClosed; the jobs are freed. Called
        after gpud_close (which ended them), or before it where host memory keeps the
        connection open: then gpud_job_free cancels each job in gpud and waits for it."""
        with self._lock:
            jobs = list(self._jobs.values())
            self._backlog.clear()
        self._jobs_abandon(jobs, url)
        for j in jobs:
            with j.lock:
                p, j.ptr = j.ptr, None
                if p:
                    lib.gpud_job_free(p)
            self._job_forget(j)
        p, self._job_pool = self._job_pool, None
        if p is not None:
            p.shutdown(wait=False)
