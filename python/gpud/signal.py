"""gpud.signal — scipy.signal functions computed by gpud.

    from gpud.signal import lombscargle      # instead of scipy.signal's
    pgram = lombscargle(x, y, freqs)

On the process's default client (gpud.default_client(): $GPUD_URL, opened on
first use), or the client= given.
"""
from __future__ import annotations

from typing import Any, Optional, Union

import numpy as np

from ._client import Client
from ._default import default_client
from ._errors import InvalidArgument, Unsupported

__all__ = ["lombscargle"]


def lombscargle(x: Any, y: Any, freqs: Any, precenter: bool = False,
                normalize: Union[bool, str] = False, *, weights: Any = None,
                floating_mean: bool = False, client: Optional[Client] = None,
                dtype: Any = None) -> np.ndarray:
    """Lomb-Scargle periodogram, as scipy.signal.lombscargle, computed in gpud.

    Parameters
    ----------
    x : array_like
        Sample times (1-d).
    y : array_like
        Measurement values, as many as x.
    freqs : array_like
        Angular frequencies for the output periodogram.
    precenter : bool, optional
        Subtract the mean of y before computing.
    normalize : bool or {'power', 'normalize'}, optional
        False / 'power': the unnormalised periodogram, A**2 * N/4 for a
        harmonic signal of amplitude A; True / 'normalize': multiplied by
        2 / dot(y, y) (y as given, not centred).
    weights, floating_mean
        scipy >= 1.15's generalised periodogram: only the defaults (None,
        False) are taken; other values raise gpud.Unsupported.
    client : gpud.Client, optional
        The gpud to use (default: gpud.default_client()).
    dtype : {None, 'float64', 'float32'}, optional (gpud's own)
        None and 'float64' compute in float64 as scipy does (inputs of other
        dtypes are converted to float64); 'float32' converts to and computes
        in float32 (faster on the GPU, about 1e-5 of the maximum).

    Returns
    -------
    pgram : numpy.ndarray
        The periodogram at freqs (float64, or float32 with dtype='float32').

    Raises
    ------
    ValueError (gpud.InvalidArgument)
        If x and y differ in length, or an array is not 1-d; gpud's message
        names the argument.

    The results are scipy <= 1.14's (Townsend's algorithm, as gpud's
    kernel computes it). scipy >= 1.15 gives the same periodogram except
    with precenter and normalize both set, where it normalises by the
    centred y.
    """
    if weights is not None or floating_mean:
        raise Unsupported("lombscargle: weights and floating_mean (scipy >= 1.15) are not "
                          "supported by gpud's lombscargle yet; got weights=%s, floating_mean=%r"
                          % ("an array" if weights is not None else None, floating_mean))
    if isinstance(normalize, str):
        modes = {"power": False, "normalize": True}
        if normalize not in modes:
            if normalize == "amplitude":
                raise Unsupported("lombscargle: normalize='amplitude' (a complex result) is "
                                  "not supported by gpud's lombscargle yet")
            raise InvalidArgument("lombscargle: normalize must be a bool, 'power' or "
                                  "'normalize', got %r" % (normalize,))
        normalize = modes[normalize]
    dt = np.dtype(dtype) if dtype is not None else np.dtype(np.float64)
    if dt not in (np.dtype(np.float64), np.dtype(np.float32)):
        raise InvalidArgument("lombscargle: dtype must be None, 'float64' or 'float32', got %r"
                              % (dtype,))
    args = {}
    for name, v in (("x", x), ("y", y), ("freqs", freqs)):
        try:
            args[name] = np.asarray(v, dtype=dt)
        except (TypeError, ValueError) as e:
            raise InvalidArgument("lombscargle: argument '%s': expected numbers, got %s"
                                  % (name, e))
    c = client if client is not None else default_client()
    return c.run("lombscargle", precenter=bool(precenter), normalize=bool(normalize), **args)
