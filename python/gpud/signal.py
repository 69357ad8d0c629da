"""gpud.signal — scipy.signal functions computed by gpud.

    from gpud.signal import lombscargle      # instead of scipy.signal's
    pgram = lombscargle(x, y, freqs)

lombscargle is a drop-in for the installed scipy's: scipy <= 1.14's results,
checks and signature where that is installed, scipy >= 1.15's (1.17's
deprecations included) where a newer one is or none is
(gpud._scipy_compat holds the per-version checks). lombscargle_for(version)
gives the drop-in for another scipy version.

On the process's default client (gpud.default_client(): $GPUD_URL, opened on
first use), or the client= given.
"""
from __future__ import annotations

import inspect
import operator
import numpy as np

from . import _scipy_compat as compat
from ._default import default_client
from ._errors import ArgumentTypeError, InvalidArgument
from ._many import lombscargle_many

__all__ = ["lombscargle", "lombscargle_for", "lombscargle_many"]

_FLOATS = (np.dtype(np.float64), np.dtype(np.float32))


class _Required:
    """freqs' default: required unless the grid f0, df, nf is given."""

    def __repr__(self):
        return "<required>"


_REQUIRED = _Required()


def _grid_scalar(name, v, convert):
    """f0, df (float) and nf (int) as Python numbers; None stays None (left out)."""
    if v is None:
        return None
    if isinstance(v, (bool, np.bool_)):
        raise ArgumentTypeError("lombscargle: argument '%s': expected a number, got a bool %r"
                                % (name, v))
    try:
        return convert(v)
    except (TypeError, ValueError) as e:
        raise ArgumentTypeError("lombscargle: argument '%s': expected %s, got %r (%s)"
                                % (name, "an integer" if convert is operator.index
                                   else "a number", v, e))


def _compute(rules, x, y, freqs, precenter, normalize, weights, floating_mean, client,
             dtype, legacy, f0, df, nf):
    dt = np.dtype(dtype) if dtype is not None else np.dtype(np.float64)
    if dt not in _FLOATS:
        raise InvalidArgument("lombscargle: dtype must be None, 'float64' or 'float32', got %r"
                              % (dtype,))
    grid_args = {"f0": _grid_scalar("f0", f0, float), "df": _grid_scalar("df", df, float),
                 "nf": _grid_scalar("nf", nf, operator.index)}
    has_grid = any(v is not None for v in grid_args.values())
    if freqs is _REQUIRED or (freqs is None and has_grid):
        if not has_grid:
            raise TypeError("lombscargle() missing 1 required positional argument: 'freqs' "
                            "(or give gpud's grid f0, df, nf)")
        if None in grid_args.values() or grid_args["nf"] < 1:
            grid = np.zeros(0)   # gpud says what is wrong with the grid
        else:
            grid = grid_args["f0"] + grid_args["df"] * np.arange(grid_args["nf"])
        freqs = None
    elif has_grid:
        raise InvalidArgument("lombscargle: give the frequencies as freqs or as the grid "
                              "f0, df, nf, not both")
    else:
        grid = None
    if legacy is None:
        legacy = rules == "1.14"
    if rules == "1.14":
        x, y, freqs, precenter, normal = compat.check_114(x, y, freqs, grid, precenter,
                                                          normalize)
        normalize = "normalize" if normal else "power"
        nfreq = (grid if grid is not None else freqs).shape[0]
        if nfreq == 0 and grid is None:
            return np.empty(0, dtype=dt)   # scipy <= 1.14: an empty periodogram
        squeeze = False
    else:
        x, y, freqs, weights, precenter, normalize = compat.check_115(
            x, y, freqs, grid, precenter, normalize, weights, rules == "1.17")
        floating_mean = bool(floating_mean)
        squeeze = True
    args = {"x": np.ascontiguousarray(x, dtype=dt), "y": np.ascontiguousarray(y, dtype=dt)}
    if freqs is not None:
        args["freqs"] = np.ascontiguousarray(freqs, dtype=dt)
    if weights is not None:
        args["weights"] = np.ascontiguousarray(weights, dtype=dt)
    args.update(grid_args)
    c = client if client is not None else default_client()
    out = c.run("lombscargle", precenter=precenter, normalize=normalize,
                floating_mean=bool(floating_mean), legacy=bool(legacy), **args)
    if squeeze and out.shape == (1,):
        # scipy >= 1.15 squeezes: a 0-d array, a complex scalar for 'amplitude'
        return out[0] if normalize == "amplitude" else out.reshape(())
    return out


_DOC_HEAD = """Lomb-Scargle periodogram, as scipy.signal.lombscargle of scipy {ver}, in gpud.

    {what}

    Parameters
    ----------
    x : array_like
        Sample times (1-d).
    y : array_like
        Measurement values, as many as x.
    freqs : array_like
        Angular frequencies for the output periodogram. Or leave it out and
        give gpud's grid ``f0``, ``df``, ``nf`` instead.
"""

_DOC_114 = """    precenter : bool
        Subtract the mean of y first (default False).
    normalize : bool
        Divide by 2/dot(y, y) of y as given (default False).
"""

_DOC_115 = """    precenter : bool
        Subtract the (unweighted) mean of y first (default False).{deprecated}
    normalize : bool or {{'power', 'normalize', 'amplitude'}}
        False / 'power' (the default): the power, A**2 * N/4 for a harmonic
        signal of amplitude A; True / 'normalize': the power over the
        weighted sum of y**2 (less the squared weighted mean with
        floating_mean), in [0, 1]; 'amplitude': the complex amplitude and
        phase of the fitted sinusoid, ``(a + 1j*b) * exp(1j*tau)``.
    weights : array_like or None
        Sample weights, as many as x: non-negative, with a positive sum.
        Default: all equal.
    floating_mean : bool
        Fit an offset at each frequency as well (default False).
"""

_DOC_TAIL = """    client : gpud.Client or None
        gpud's own: the gpud to use (default: gpud.default_client()).
    dtype : {{None, 'float64', 'float32'}}
        gpud's own: None and 'float64' compute in float64 as scipy does
        (inputs of other dtypes are converted to float64); 'float32'
        converts them to float32 and computes in float32 on the GPU (faster;
        within about 1e-4 of the maximum).
    legacy : bool or None
        gpud's own: True gives scipy <= 1.14's results (Townsend's
        algorithm: no weights, floating_mean or 'amplitude'), False today's
        (scipy >= 1.15); None (the default) those of this scipy version.
    f0, df, nf : float, float, int
        gpud's own: the frequency grid ``f0 + df*k`` for k < nf (nf >= 1),
        instead of freqs: nothing is uploaded, and the results are identical
        to those for ``freqs = f0 + df*np.arange(nf)``.

    Returns
    -------
    pgram : numpy.ndarray
        {returns}

    Raises
    ------
    {raises}
"""

_VARIANTS = {
    "1.14": dict(
        ver="<= 1.14",
        what="Townsend's algorithm (scipy <= 1.14's results, gpud's legacy=True).",
        returns="One float64 value per frequency (float32 with dtype='float32'), 1-d.",
        raises="AssertionError\n        x, y or freqs not 1-d (scipy asserts).\n"
               "    ValueError (gpud.InvalidArgument)\n        x and y of different "
               "lengths; x empty (gpud's check: scipy itself aborts).\n"
               "    ZeroDivisionError\n        A frequency equal to 0."),
    "1.15": dict(
        ver="1.15 and 1.16",
        what="The generalised periodogram of Zechmeister and Kurster, with sample\n"
             "    weights and an optional floating mean.",
        deprecated="",
        returns="One value per frequency: float64 (float32 with dtype='float32'),\n"
                "        complex128 (complex64) for normalize='amplitude'; squeezed as\n"
                "        scipy's: 0-d for a single frequency (a complex scalar for\n"
                "        'amplitude').",
        raises="ValueError (gpud.InvalidArgument)\n        x, y, weights not 1-d arrays "
               "of one non-zero length, freqs not 1-d\n        and non-empty, a negative "
               "weight or a zero sum, normalize neither\n        a bool nor one of the "
               "three words; scipy's message, then gpud's."),
}
_VARIANTS["1.17"] = dict(
    _VARIANTS["1.15"], ver=">= 1.17 (and without scipy)",
    deprecated="\n        Deprecated (scipy 1.17): giving it at all warns "
               "(DeprecationWarning).",
    what="The generalised periodogram of Zechmeister and Kurster, with sample\n"
         "    weights and an optional floating mean. The arguments after freqs are\n"
         "    keyword-only: by position they warn (DeprecationWarning) and work.")


def _doc(rules):
    v = _VARIANTS[rules]
    body = _DOC_114 if rules == "1.14" else _DOC_115.format(**v)
    return _DOC_HEAD.format(**v) + body + _DOC_TAIL.format(**v)


def _lombscargle_114(x, y, freqs=_REQUIRED, precenter=False, normalize=False, *,
                     client=None, dtype=None, legacy=None, f0=None, df=None, nf=None):
    return _compute("1.14", x, y, freqs, precenter, normalize, None, False, client, dtype,
                    legacy, f0, df, nf)


def _lombscargle_115(x, y, freqs=_REQUIRED, precenter=False, normalize=False, *,
                     weights=None, floating_mean=False, client=None, dtype=None,
                     legacy=None, f0=None, df=None, nf=None):
    return _compute("1.15", x, y, freqs, precenter, normalize, weights, floating_mean,
                    client, dtype, legacy, f0, df, nf)


def _lombscargle_117_kw(x, y, freqs=_REQUIRED, *, precenter=compat.NoValue,
                        normalize=False, weights=None, floating_mean=False, client=None,
                        dtype=None, legacy=None, f0=None, df=None, nf=None):
    return _compute("1.17", x, y, freqs, precenter, normalize, weights, floating_mean,
                    client, dtype, legacy, f0, df, nf)


def _lombscargle_117(*args, **kwargs):
    if len(args) > 3:
        kwargs.update(compat.positional_deprecation(args))
        return _lombscargle_117_kw(**kwargs)
    return _lombscargle_117_kw(*args, **kwargs)


for _f in (_lombscargle_114, _lombscargle_115, _lombscargle_117_kw):
    _f.__name__ = _f.__qualname__ = "lombscargle"   # Python's TypeErrors name scipy's function

_IMPLS = {"1.14": _lombscargle_114, "1.15": _lombscargle_115, "1.17": _lombscargle_117}
_SIGS = {"1.14": _lombscargle_114, "1.15": _lombscargle_115, "1.17": _lombscargle_117_kw}
_MADE = {}


def lombscargle_for(version):
    """The drop-in lombscargle for scipy ``version`` ("1.10", "1.16", (1, 18), ...;
    None: no scipy, today's): its checks, exceptions, warnings, signature and
    result shapes. gpud.signal.lombscargle is lombscargle_for(the installed scipy)."""
    rules = compat.rules_for(version)
    if rules in _MADE:
        return _MADE[rules]
    impl = _IMPLS[rules]

    def lombscargle(*args, **kwargs):
        return impl(*args, **kwargs)

    sig = inspect.signature(_SIGS[rules])
    # freqs is required as in scipy (unless gpud's grid is given): shown without a default
    sig = sig.replace(parameters=[p.replace(default=inspect.Parameter.empty)
                                  if p.name == "freqs" else p
                                  for p in sig.parameters.values()])
    lombscargle.__signature__ = sig
    lombscargle.__doc__ = _doc(rules)
    lombscargle.__module__ = __name__
    lombscargle.__qualname__ = "lombscargle"
    lombscargle.scipy_rules = rules
    _MADE[rules] = lombscargle
    return lombscargle


lombscargle = lombscargle_for(compat.SCIPY_VERSION)
