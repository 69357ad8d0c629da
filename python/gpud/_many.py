"""gpud.signal.lombscargle_many — many Lomb-Scargle periodograms in few runs.

Series of their own lengths and sample times (lists of 1-d arrays, or 2-d
arrays (B, N)) go to gpud's lombscargle_many kernel concatenated and cut by
offsets; all of a run's series in one launch on the GPU. A batch is cut into
chunks of series so that no run asks gpud for more device memory than the
tenant may have (client.status()'s pool and device figures) or than
MAX_CALL_BYTES (or max_bytes=); a chunk refused for memory (gpud.OutOfMemory,
gpud.QuotaExceeded) is halved and retried. The result is the same whatever
the chunking.

Over ipc:// a batch of PIPE_MIN_BYTES and more goes through gpud._many_pipe:
chunks of tens of MiB staged in host memory shared with gpud, several in
flight, each chunk's rows copied into one result array while the device works
on the next. Otherwise (tcp://, small batches) each chunk is one Client.run
and the chunks' rows are concatenated in order.
"""
from __future__ import annotations

import operator
import re
from typing import Any, List, Optional, Sequence, Union

import numpy as np

from . import _many_pipe
from ._client import Client
from ._default import default_client
from ._errors import ArgumentTypeError, InvalidArgument, OutOfMemory, error_for

__all__ = ["lombscargle_many", "MAX_CALL_BYTES"]

#: The most device bytes (inputs and output) one run of lombscargle_many may
#: take; larger batches go as several runs. max_bytes= overrides it per call.
MAX_CALL_BYTES = 1 << 30

#: Of the memory gpud says is free (its pool's limit less what is in use, a
#: device's free memory), the share one run may take.
FREE_SHARE = 0.5

_FLOATS = (np.dtype(np.float64), np.dtype(np.float32))
_NAME = "lombscargle_many"


def _fail(msg):
    raise InvalidArgument("%s: %s" % (_NAME, msg))


def _series(name: str, v: Any, dt: np.dtype) -> List[np.ndarray]:
    """A list of 1-d arrays of dt: from a 2-d array (its rows) or a sequence."""
    if isinstance(v, np.ndarray):
        if v.ndim != 2:
            _fail("argument '%s' must be a sequence of 1-d arrays or a 2-d array (B, N), got "
                  "a %d-d array" % (name, v.ndim))
        rows = list(v)
    else:
        try:
            rows = list(v)
        except TypeError:
            raise ArgumentTypeError("%s: argument '%s' must be a sequence of 1-d arrays or a "
                                    "2-d array (B, N), got %s"
                                    % (_NAME, name, type(v).__name__))
    out = []
    for i, r in enumerate(rows):
        try:
            a = np.asarray(r, dtype=dt)
        except (TypeError, ValueError) as e:
            _fail("argument '%s[%d]': expected numbers, got %s" % (name, i, e))
        if a.ndim != 1:
            _fail("argument '%s[%d]' must be 1-d, got %d-d" % (name, i, a.ndim))
        out.append(a)
    return out


def _grid_scalar(name, v, convert):
    if v is None:
        return None
    if isinstance(v, (bool, np.bool_)):
        raise ArgumentTypeError("%s: argument '%s': expected a number, got a bool %r"
                                % (_NAME, name, v))
    try:
        return convert(v)
    except (TypeError, ValueError) as e:
        raise ArgumentTypeError("%s: argument '%s': expected %s, got %r (%s)"
                                % (_NAME, name, "an integer" if convert is operator.index
                                   else "a number", v, e))


def _budget(c: Client, max_bytes: Optional[int]) -> int:
    """Bytes one run may take: max_bytes (or MAX_CALL_BYTES), and a share of
    what gpud says is free for this tenant (pool limit less in use, each
    device's free memory, the host memory limit less used)."""
    budget = int(max_bytes if max_bytes is not None else MAX_CALL_BYTES)
    if budget < 1:
        _fail("max_bytes must be at least 1, got %r" % (max_bytes,))
    if max_bytes is not None:
        return budget
    try:
        st = c.status()
    except Exception:  # the figures are a hint; the halving on OutOfMemory stays
        return budget
    free = []
    pool = st.get("pool")
    if pool and pool.get("limit", 0) > 0:
        free.append(pool["limit"] - pool.get("in_use", 0))
    for d in getattr(st.get("server"), "devices", []) or []:
        if d.get("memory_free", 0) > 0:
            free.append(d["memory_free"])
    host = st.get("host_memory")
    if host and host.get("limit", 0) > 0:
        free.append(host["limit"] - host.get("used", 0))
    if free:
        budget = min(budget, max(1, int(min(free) * FREE_SHARE)))
    return budget


def _chunks(sizes: Sequence[int], fixed: int, budget: int):
    """Consecutive [lo, hi) of series whose bytes (plus fixed) fit budget; at
    least one series each."""
    lo, total = 0, fixed
    for i, s in enumerate(sizes):
        if i > lo and total + s > budget:
            yield lo, i
            lo, total = i, fixed
        total += s
    if lo < len(sizes):
        yield lo, len(sizes)


_WHERE = re.compile(r"(series |offsets\[)(\d+)")


def _shifted(e, lo):
    """gpud's error for a chunk starting at series lo, its series numbered in the batch."""
    if lo == 0:
        return e
    msg = _WHERE.sub(lambda m: m.group(1) + str(int(m.group(2)) + lo), str(e))
    return error_for(e.status, msg)


def lombscargle_many(xs: Any, ys: Any, freqs: Any = None, *, weights: Any = None,
                     precenter: bool = False, normalize: Union[bool, str] = False,
                     floating_mean: bool = False, dtype: Any = None,
                     f0: Optional[float] = None, df: Optional[float] = None,
                     nf: Optional[int] = None, method: Optional[str] = None,
                     eps: Optional[float] = None, legacy: bool = False, max_bytes: Optional[int] = None,
                     client: Optional[Client] = None) -> np.ndarray:
    """Lomb-Scargle periodograms of B series, each as gpud.signal.lombscargle.

    Parameters
    ----------
    xs, ys : sequence of 1-d array_like, or 2-d array_like (B, N)
        Each series' sample times and values (xs[b] and ys[b] of one length,
        at least one sample; the series' lengths may differ).
    freqs : array_like, optional
        Angular frequencies, M, every series'. Or the grid ``f0``, ``df``,
        ``nf`` (exactly one of the two forms).
    weights : sequence of 1-d array_like, or 2-d array_like, optional
        Each series' sample weights (non-negative, a positive sum).
    precenter, normalize, floating_mean, legacy, dtype :
        As gpud.signal.lombscargle, for every series.
    method : {None, 'auto', 'direct', 'nufft'}, optional
        'direct': every sample at every frequency, all series in one launch;
        'nufft': the grid ``f0``, ``df``, ``nf`` only (at most 2**29
        frequencies), each series' sums through non-uniform FFTs, to
        ``eps``; None or 'auto': gpud picks one for the run by
        gpud.signal.lombscargle's cost model, for series of the run's
        average length (direct for ``freqs``).
    eps : float, optional
        method='nufft' (and auto's pick of it): the error allowed, relative
        to each series' largest value (default 1e-9 for float64, 1e-5 for
        float32; at least 1e-14, 1e-6, at most 0.1), at frequencies whose
        phases span at least 0.2 radians over the series' samples, f (max x
        - min x) >= 0.2 (0.4 for float64's default); below that the error
        grows about as the span's 4th power falls: use method='direct'.
    max_bytes : int, optional
        The most device bytes one run may take (inputs and the (B, M)
        output); default gpud.signal.lombscargle_many's module setting
        ``gpud._many.MAX_CALL_BYTES`` (1 GiB) and half of what gpud's
        status says is free. Larger batches go as several runs.
    client : gpud.Client, optional
        The gpud to use (default: gpud.default_client()).

    Returns
    -------
    pgram : numpy.ndarray (B, M)
        Row b series b's periodogram: float64 (float32 with
        dtype='float32'), complex for normalize='amplitude'.

    Raises
    ------
    ValueError (gpud.InvalidArgument)
        xs, ys (or weights) of different numbers of series or lengths, an
        empty series, a series not 1-d, bad weights (the series named),
        and every refusal of gpud.signal.lombscargle.
    TypeError (gpud.ArgumentTypeError)
        normalize neither a bool nor a str; f0, df, nf not numbers; xs, ys
        not sequences.
    """
    if isinstance(normalize, (bool, np.bool_)):
        normalize = "normalize" if normalize else "power"
    elif not isinstance(normalize, str):
        raise ArgumentTypeError("%s: argument 'normalize' must be a bool or a str ('power', "
                                "'normalize' or 'amplitude'), got %s"
                                % (_NAME, type(normalize).__name__))
    dt = np.dtype(dtype) if dtype is not None else np.dtype(np.float64)
    if dt not in _FLOATS:
        _fail("dtype must be None, 'float64' or 'float32', got %r" % (dtype,))
    xl, yl = _series("xs", xs, dt), _series("ys", ys, dt)
    wl = _series("weights", weights, dt) if weights is not None else None
    if len(xl) != len(yl):
        _fail("xs and ys must hold as many series, got %d and %d" % (len(xl), len(yl)))
    if wl is not None and len(wl) != len(xl):
        _fail("weights must hold a series for each of xs' %d, got %d" % (len(xl), len(wl)))
    for b, (x, y) in enumerate(zip(xl, yl)):
        if len(x) == 0:
            _fail("series %d is empty: each series needs at least one sample" % b)
        if len(x) != len(y):
            _fail("xs[%d] and ys[%d] must have the same length, got %d and %d"
                  % (b, b, len(x), len(y)))
        if wl is not None and len(wl[b]) != len(x):
            _fail("weights[%d] must have the length of xs[%d], got %d for %d samples"
                  % (b, b, len(wl[b]), len(x)))
    args = {"f0": _grid_scalar("f0", f0, float), "df": _grid_scalar("df", df, float),
            "nf": _grid_scalar("nf", nf, operator.index)}
    if freqs is not None:
        try:
            args["freqs"] = np.asarray(freqs, dtype=dt)
        except (TypeError, ValueError) as e:
            _fail("argument 'freqs': expected numbers, got %s" % e)
        m = args["freqs"].size
    elif nf is not None:
        m = args["nf"]
    else:
        m = 0  # gpud says what is missing
    if method is not None:
        args["method"] = method
    if eps is not None:
        args["eps"] = _grid_scalar("eps", eps, float)
    c = client if client is not None else default_client()
    scalars = dict(precenter=bool(precenter), normalize=normalize,
                   floating_mean=bool(floating_mean), legacy=bool(legacy))
    odt = np.result_type(dt, np.complex64) if normalize == "amplitude" else dt
    if not xl:
        if m < 1:
            _fail("no series and no frequencies: give xs and ys of at least one series")
        return np.empty((0, m), dtype=odt)

    es = dt.itemsize
    per_sample = es * (3 if wl is not None else 2)
    sizes = [len(x) * per_sample + 8 + max(m, 0) * odt.itemsize for x in xl]
    fixed = 8 + (max(m, 0) * es if freqs is not None else 0)
    budget = _budget(c, max_bytes)
    out = _many_pipe.run(c, xl, yl, wl, args, scalars, dt, odt, m, sizes, fixed, budget,
                         _chunks, _shifted)
    if out is not None:
        return out

    def run(lo, hi):
        x, y = np.concatenate(xl[lo:hi]), np.concatenate(yl[lo:hi])
        off = np.zeros(hi - lo + 1, dtype=np.int64)
        np.cumsum([len(v) for v in xl[lo:hi]], out=off[1:])
        a = dict(args)
        if wl is not None:
            a["weights"] = np.concatenate(wl[lo:hi])
        try:
            return c.run(_NAME, x=x, y=y, offsets=off, **scalars, **a)
        except InvalidArgument as e:
            raise _shifted(e, lo) from None

    def run_split(lo, hi):
        try:
            return [run(lo, hi)]
        except OutOfMemory:
            if hi - lo <= 1:
                raise
            mid = lo + (hi - lo) // 2
            return run_split(lo, mid) + run_split(mid, hi)

    parts = []
    for lo, hi in _chunks(sizes, fixed, budget):
        parts.extend(run_split(lo, hi))
    return parts[0] if len(parts) == 1 else np.concatenate(parts, axis=0)
