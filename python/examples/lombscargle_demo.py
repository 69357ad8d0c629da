"""The demo signal's periodogram from Python through gpud ($GPUD_URL), as make demo runs it.

2**10 evenly spaced x on [0.01, 10 pi], y = 2 cos(x + pi/2), 10% of the points kept
at random; 2**20 angular frequencies on [0.01, 10], given as the grid f0, df, nf (gpud
makes f0 + df*k itself: nothing is uploaded for them). Prints the peak (about 1.0
rad/s), how long the first and a warm call took, and the largest difference from
scipy.signal.lombscargle where scipy is installed.
"""
import time

import numpy as np

import gpud
from gpud.signal import lombscargle

rng = np.random.default_rng(1234)
x = np.linspace(0.01, 10 * np.pi, 2 ** 10)
x = x[rng.random(2 ** 10) >= 0.9]
y = 2.0 * np.cos(x + 0.5 * np.pi)
f0, nf = 0.01, 2 ** 20
df = (10 - f0) / (nf - 1)
f = f0 + df * np.arange(nf)           # the same frequencies as an array

t0 = time.perf_counter()
pgram = lombscargle(x, y, f0=f0, df=df, nf=nf)  # or lombscargle(x, y, f), as scipy's
t1 = time.perf_counter()
pgram = lombscargle(x, y, f0=f0, df=df, nf=nf)
t2 = time.perf_counter()
c = gpud.default_client()
print("python: %d samples, %d frequencies on gpud's %s backend: peak at %.4f rad/s; "
      "first call %.1f ms, warm %.1f ms" % (len(x), len(f), c.backend, f[np.argmax(pgram)],
                                            (t1 - t0) * 1e3, (t2 - t1) * 1e3))
try:
    from scipy.signal import lombscargle as scipy_lombscargle
except ImportError:
    pass
else:
    n = 4096  # scipy is slow on 2**20 frequencies: compare the first 4096
    ref = scipy_lombscargle(x, y, f[:n])
    print("python: max |gpud - scipy| / max = %.1e" % (np.max(np.abs(pgram[:n] - ref))
                                                       / np.max(ref)))
