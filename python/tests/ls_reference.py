"""A numpy reference for scipy >= 1.15's lombscargle (its formulas, in
float64, numpy only), shared by test_signal.py and test_many.py."""
import numpy as np


def ls_ref(x, y, freqs, precenter=False, normalize="power", weights=None,
           floating_mean=False):
    """scipy >= 1.15's lombscargle, from its formulas, in float64."""
    x, y, f = (np.asarray(a, np.float64) for a in (x, y, freqs))
    w = np.ones(len(x)) if weights is None else np.asarray(weights, np.float64)
    w = w / w.sum()
    if precenter:
        y = y - y.mean()
    Y = w @ y
    epsneg = np.finfo(np.float64).epsneg
    ph = np.outer(x, f)                       # samples x frequencies
    c, s = np.cos(ph), np.sin(ph)
    CC = w @ (c * c)
    SS = 1 - CC
    CS = w @ (c * s)
    if floating_mean:
        C, S = w @ c, w @ s
        CC, SS, CS = CC - C * C, SS - S * S, CS - C * S
    tau = 0.5 * np.arctan2(2 * CS, CC - SS)
    c, s = np.cos(ph - tau), np.sin(ph - tau)
    YC, YS = (w * y) @ c, (w * y) @ s
    CC = w @ (c * c)
    SS = 1 - CC
    if floating_mean:
        C, S = w @ c, w @ s
        YC, YS, CC, SS = YC - Y * C, YS - Y * S, CC - C * C, SS - S * S
    CC, SS = np.maximum(CC, epsneg), np.maximum(SS, epsneg)
    a, b = YC / CC, YS / SS
    p = 2 * (a * YC + b * YS)
    if normalize == "power":
        return p * len(x) / 4
    if normalize == "normalize":
        YY = w @ (y * y) - (Y * Y if floating_mean else 0)
        return p / (2 * YY)
    return (a + 1j * b) * np.exp(1j * tau)
