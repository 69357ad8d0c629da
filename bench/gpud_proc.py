"""bench/gpud_proc.py — what the Python benches share: a gpud started on a socket in a
directory of their own and waited for (gpuctl status --wait), and this tree's Python
package (python/) over a given libgpud-client.
"""
import argparse
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def start(gpud, d, backend, name, args=()):
    """gpud on ipc://D/gpud.sock (and args: more listeners, a config, a log level), ready:
    (process, url). name: the bench, for the message when it does not start."""
    url = "ipc://%s/gpud.sock" % d
    log = os.path.join(d, "gpud.log")
    proc = subprocess.Popen([gpud, "--backend", backend, "--listen", url, *args],
                            stdout=open(log, "w"), stderr=subprocess.STDOUT)
    gpuctl = os.path.join(os.path.dirname(gpud), "gpuctl")
    if subprocess.run([gpuctl, "--url", url, "status", "--wait", "60"],
                      stdout=subprocess.DEVNULL).returncode != 0:
        proc.kill()
        raise SystemExit("%s: %s did not start: see %s" % (name, gpud, log))
    return proc, url


def package(lib, no_ring=False):
    """gpud._lib of this tree's package over the library at lib (the request ring off
    with no_ring: every call a message on the socket)."""
    os.environ["GPUD_LIB"] = os.path.abspath(lib)
    if no_ring:
        os.environ["GPUD_NO_RING"] = "1"
    sys.path.insert(0, os.path.join(HERE, "..", "python"))
    import gpud._lib as _lib  # noqa: E402  (GPUD_LIB set above)
    return _lib


def arguments(doc, backend, count, default):
    """The command line GPUD LIBGPUD_CLIENT_SO [--backend B] [--COUNT N], parsed."""
    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument("gpud")
    ap.add_argument("lib")
    ap.add_argument("--backend", default=backend)
    ap.add_argument("--" + count, type=int, default=default)
    return ap.parse_args()
