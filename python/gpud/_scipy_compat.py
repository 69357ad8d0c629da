"""gpud._scipy_compat — scipy.signal.lombscargle's argument checks, version by version.

gpud.signal.lombscargle is a drop-in for the *installed* scipy's lombscargle,
so it makes the checks that scipy makes, in the same order, raising the same
exception types (gpud's subclasses where scipy raises ValueError/TypeError),
before anything is sent to gpud. What scipy does, from its sources
(scipy/signal/_spectral_py.py, _spectral.py / _spectral.pyx):

  "1.14"  scipy <= 1.14 (Townsend's algorithm), also when scipy is absent
          and legacy=True is asked for:
            signature (x, y, freqs, precenter=False, normalize=False);
            x, y, freqs = np.ascontiguousarray(..., float64) (0-d -> 1 value);
            assert each is 1-d (AssertionError);
            x.shape != y.shape -> ValueError;
            a frequency equal to 0 -> ZeroDivisionError (pythran's check;
            the Cython build divides by it);
            precenter and normalize by truth value; result 1-d.
  "1.15"  scipy 1.15 and 1.16 (the generalised periodogram):
            signature (x, y, freqs, precenter=False, normalize=False, *,
            weights=None, floating_mean=False);
            weights (or ones_like(y)), x, y, freqs = np.asarray(..., float64);
            x 1-d, not empty, x.shape == y.shape == weights.shape, else
            ValueError; freqs 1-d, not empty, else ValueError; weights >= 0
            with a positive sum, else ValueError; normalize: a bool, or one
            of 'power', 'normalize', 'amplitude', else ValueError (any other
            type too); result squeezed (0-d for one frequency; a complex
            scalar for 'amplitude'). 1.15 also scaled the caller's float64
            weights and centred its y in place (scipy issue 23474, fixed in
            1.16): gpud never writes its inputs.
  "1.17"  scipy 1.17 and 1.18: as "1.15", but the arguments after freqs are
          keyword-only by deprecation: passing them by position warns
          (DeprecationWarning "You are passing as positional arguments: ...")
          and still works; giving precenter at all (True or False) warns
          (DeprecationWarning "... Please leave 'precenter' unspecified ...")
          after the normalize check.

SCIPY_VERSION is the installed scipy's (major, minor), read once; None if
scipy is not installed. RULES is the rule set that gpud.signal.lombscargle
follows: rules_for(SCIPY_VERSION), "1.17" without scipy (today's).
Owner: the calling thread (pure functions; the module state is read-only).
"""
from __future__ import annotations

import re
import warnings

import numpy as np

from ._errors import InvalidArgument

__all__ = ["SCIPY_VERSION", "RULES", "rules_for", "NoValue"]


def _installed_version():
    try:
        import scipy
    except ImportError:
        return None
    m = re.match(r"(\d+)\.(\d+)", getattr(scipy, "__version__", ""))
    return (int(m.group(1)), int(m.group(2))) if m else None


def rules_for(version):
    """The rule set ("1.14", "1.15" or "1.17") of a scipy (major, minor) or "X.Y" string;
    None (no scipy): "1.17", today's."""
    if version is None:
        return "1.17"
    if isinstance(version, str):
        m = re.match(r"(\d+)\.(\d+)", version)
        if not m:
            raise InvalidArgument("lombscargle: scipy version must look like '1.15', got %r"
                                  % (version,))
        version = (int(m.group(1)), int(m.group(2)))
    if tuple(version) < (1, 15):
        return "1.14"
    if tuple(version) < (1, 17):
        return "1.15"
    return "1.17"


SCIPY_VERSION = _installed_version()
RULES = rules_for(SCIPY_VERSION)


class _NoValueType:
    """precenter's default from scipy 1.17 on: 'not given' (scipy's _NoValue)."""

    def __repr__(self):
        return "<no value>"


NoValue = _NoValueType()

PRECENTER_DEPRECATION = (
    "Use of parameter 'precenter' is deprecated as of SciPy 1.17.0 and "
    "will be removed in 1.19.0. Please leave 'precenter' unspecified. "
    "Passing True to 'precenter' "
    "can be exactly substituted by passing 'y = (y - y.mean())' into "
    "the input. Consider setting `floating_mean` to True instead.")

POSITIONAL_NAMES = ("x", "y", "freqs", "precenter", "normalize", "weights", "floating_mean")


def positional_deprecation(args):
    """scipy >= 1.17's _deprecate_positional_args(version="1.19.0"): warns if more than
    x, y, freqs are given by position; returns them as keywords (at most the 7 names of
    scipy's signature, as scipy's zip does)."""
    extra = len(args) - 3
    names = set(POSITIONAL_NAMES[3:3 + extra])
    warnings.warn(
        "You are passing as positional arguments: %s. "
        "Please change your invocation to use keyword arguments. "
        "From SciPy 1.19.0, passing these as positional "
        "arguments will result in an error." % ", ".join(names),
        DeprecationWarning, stacklevel=4)
    return dict(zip(POSITIONAL_NAMES, args))


def check_114(x, y, freqs, grid, precenter, normalize):
    """scipy <= 1.14's checks. Returns (x, y, freqs or None, precenter, normalize) as
    float64 arrays and bools. grid: the float64 frequencies of f0/df/nf, or None."""
    x = np.ascontiguousarray(x, dtype=np.float64)
    y = np.ascontiguousarray(y, dtype=np.float64)
    if grid is None:
        freqs = np.ascontiguousarray(freqs, dtype=np.float64)
    for name, a in (("x", x), ("y", y), ("freqs", freqs)):
        if a is not None and a.ndim != 1:
            raise AssertionError("lombscargle: argument '%s' must be 1-d, got %d-d (shape %s)"
                                 % (name, a.ndim, a.shape))
    precenter = bool(precenter)
    if x.shape != y.shape:
        raise InvalidArgument("lombscargle: x and y must be of the same size, got %d and %d "
                              "values (scipy: Input arrays do not have the same size.)"
                              % (x.shape[0], y.shape[0]))
    f = grid if grid is not None else freqs
    zero = np.flatnonzero(f == 0)
    if zero.size:
        raise ZeroDivisionError("lombscargle: frequency %d is 0; scipy <= 1.14 divides by "
                                "each frequency" % zero[0])
    return x, y, freqs, precenter, bool(normalize)


_WORDS = ["power", "normalize", "amplitude"]


def check_115(x, y, freqs, grid, precenter, normalize, weights, warn_precenter):
    """scipy >= 1.15's checks. Returns (x, y, freqs or None, weights or None, precenter,
    normalize word). warn_precenter: scipy >= 1.17's deprecation of precenter."""
    given_weights = weights is not None
    if weights is None:
        weights = np.ones_like(y, dtype=np.float64)
    else:
        weights = np.asarray(weights, dtype=np.float64)
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    if grid is None:
        freqs = np.asarray(freqs, dtype=np.float64)
    if not (x.ndim == 1 and x.size > 0 and x.shape == y.shape == weights.shape):
        raise InvalidArgument(
            "Parameters x, y, weights must be 1-D arrays of equal non-zero length! "
            "(lombscargle: got x %s, y %s, weights %s)" % (x.shape, y.shape, weights.shape))
    if grid is None and not (freqs.ndim == 1 and freqs.size > 0):
        raise InvalidArgument("Parameter freqs must be a 1-D array of non-zero length! "
                              "(lombscargle: got freqs of shape %s)" % (freqs.shape,))
    if not (np.all(weights >= 0) and np.sum(weights) > 0):
        raise InvalidArgument("Parameter weights must have only non-negative entries "
                              "which sum to a positive value! (lombscargle: argument "
                              "'weights')")
    if isinstance(normalize, bool):
        normalize = "normalize" if normalize else "power"
    if normalize not in _WORDS:
        raise InvalidArgument(
            "Normalize must be: False (or 'power'), True (or 'normalize'), "
            "or 'amplitude'. (lombscargle: got %r)" % (normalize,))
    if warn_precenter:
        if precenter is not NoValue:
            warnings.warn(PRECENTER_DEPRECATION, DeprecationWarning, stacklevel=6)
        else:
            precenter = False
    precenter = bool(precenter)
    return x, y, freqs, (weights if given_weights else None), precenter, normalize
