"""gpud.signal — scipy.signal functions computed by gpud.

    from gpud.signal import lombscargle      # instead of scipy.signal's
    pgram = lombscargle(x, y, freqs)

On the process's default client (gpud.default_client(): $GPUD_URL, opened on
first use), or the client= given.
"""
from __future__ import annotations

import operator
from typing import Any, Optional, Union

import numpy as np

from ._client import Client
from ._default import default_client
from ._errors import ArgumentTypeError, InvalidArgument
from ._many import lombscargle_many

__all__ = ["lombscargle", "lombscargle_many"]

_FLOATS = (np.dtype(np.float64), np.dtype(np.float32))


def _array(name, v, dt):
    try:
        return np.asarray(v, dtype=dt)
    except (TypeError, ValueError) as e:
        raise InvalidArgument("lombscargle: argument '%s': expected numbers, got %s"
                              % (name, e))


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


def lombscargle(x: Any, y: Any, freqs: Any = None, precenter: bool = False,
                normalize: Union[bool, str] = False, *, weights: Any = None,
                floating_mean: bool = False, client: Optional[Client] = None,
                dtype: Any = None, legacy: bool = False, f0: Optional[float] = None,
                df: Optional[float] = None, nf: Optional[int] = None) -> np.ndarray:
    """Lomb-Scargle periodogram, as scipy.signal.lombscargle, computed in gpud.

    The default is today's scipy (>= 1.15): the generalised periodogram of
    Zechmeister and Kürster, with sample weights and an optional floating
    mean. ``legacy=True`` gives scipy <= 1.14's results instead.

    Parameters
    ----------
    x : array_like
        Sample times (1-d, not empty).
    y : array_like
        Measurement values, as many as x.
    freqs : array_like, optional
        Angular frequencies for the output periodogram. Or leave it out and
        give the grid ``f0``, ``df``, ``nf`` (exactly one of the two forms).
    precenter : bool, optional
        Subtract the (unweighted) mean of y first.
    normalize : bool or {'power', 'normalize', 'amplitude'}, optional
        False / 'power' (default): the power, A**2 * N/4 for a harmonic signal
        of amplitude A; True / 'normalize': the power over the weighted sum
        of y**2 (less the squared weighted mean with floating_mean), in
        [0, 1]; 'amplitude': the complex amplitude and phase of the fitted
        sinusoid, ``(a + 1j*b) * exp(1j*tau)``. Any other type raises
        TypeError, as scipy; an unknown word raises ValueError.
    weights : array_like, optional
        Sample weights, as many as x: non-negative, with a positive sum
        (else ValueError with gpud's message). Default: all equal.
    floating_mean : bool, optional
        Fit an offset at each frequency as well.
    client : gpud.Client, optional
        The gpud to use (default: gpud.default_client()).
    dtype : {None, 'float64', 'float32'}, optional (gpud's own)
        None and 'float64' compute in float64 as scipy does (x, y, freqs and
        weights of other dtypes are converted to float64); 'float32'
        converts them to float32 and computes in float32 on the GPU (faster;
        within about 1e-4 of the maximum).
    legacy : bool, optional (gpud's own)
        scipy <= 1.14's results (Townsend's algorithm). They differ from
        today's only with precenter and normalize both set, where scipy
        <= 1.14 normalises by 2/dot(y, y) of y as given (not centred). Takes
        no weights, floating_mean or normalize='amplitude'.
    f0, df, nf : float, float, int, optional (gpud's own)
        The frequency grid ``f0 + df*k`` for k < nf (nf >= 1), instead of
        freqs: nothing is uploaded, and the results are identical to those
        for ``freqs = f0 + df*np.arange(nf)`` computed in float64 (also
        with dtype='float32': the grid itself stays float64).

    Returns
    -------
    pgram : numpy.ndarray
        One value per frequency: float64 (float32 with dtype='float32'), or
        complex128 (complex64) for normalize='amplitude'. Always 1-d, also
        for a single frequency (scipy >= 1.15 gives a 0-d array there).

    Raises
    ------
    ValueError (gpud.InvalidArgument)
        x and y of different lengths or empty, an array not 1-d, weights of
        another length or with a negative value or a zero sum, freqs given
        together with the grid (or neither), an unknown normalize word,
        legacy=True with weights, floating_mean or 'amplitude'; gpud's
        message names the argument.
    TypeError (gpud.ArgumentTypeError)
        normalize neither a bool nor a str; f0, df, nf not numbers.
    """
    if isinstance(normalize, (bool, np.bool_)):
        normalize = "normalize" if normalize else "power"
    elif not isinstance(normalize, str):
        raise ArgumentTypeError("lombscargle: argument 'normalize' must be a bool or a str "
                                "('power', 'normalize' or 'amplitude'), got %s"
                                % type(normalize).__name__)
    dt = np.dtype(dtype) if dtype is not None else np.dtype(np.float64)
    if dt not in _FLOATS:
        raise InvalidArgument("lombscargle: dtype must be None, 'float64' or 'float32', got %r"
                              % (dtype,))
    args = {"x": _array("x", x, dt), "y": _array("y", y, dt)}
    if freqs is not None:
        args["freqs"] = _array("freqs", freqs, dt)
    if weights is not None:
        args["weights"] = _array("weights", weights, dt)
    # The grid goes as it is; gpud says what is wrong with it (a part missing,
    # nf < 1, given with freqs).
    args["f0"] = _grid_scalar("f0", f0, float)
    args["df"] = _grid_scalar("df", df, float)
    args["nf"] = _grid_scalar("nf", nf, operator.index)
    c = client if client is not None else default_client()
    return c.run("lombscargle", precenter=bool(precenter), normalize=normalize,
                 floating_mean=bool(floating_mean), legacy=bool(legacy), **args)
