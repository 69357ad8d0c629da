"""Fixtures of the Python suite: a real gpud on a temporary ipc:// socket.

Environment (make test-python sets it):
  GPUD_BIN      the gpud to start (default: build/gpud of this tree)
  GPUCTL_BIN    gpuctl, used to wait until gpud answers (gpuctl status --wait)
  GPUD_LIB      libgpud-client.so.0 for the package (see gpud/_lib.py)
  GPUD_BACKEND  cpu (default) or cuda: the backend the suite runs on
Waiting is on events only: gpuctl status --wait returns when gpud answers,
and gpud's exit is waited for with Popen.wait.
"""
import os
import shutil
import signal
import subprocess
import tempfile

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), os.pardir, os.pardir))
GPUD_BIN = os.environ.get("GPUD_BIN", os.path.join(ROOT, "build", "gpud"))
GPUCTL_BIN = os.environ.get("GPUCTL_BIN", os.path.join(ROOT, "build", "gpuctl"))
BACKEND = os.environ.get("GPUD_BACKEND", "cpu")


class Gpud:
    """One gpud process on a socket of its own; stop() checks it exits 0."""

    def __init__(self, config=None, args=()):
        root = tempfile.gettempdir()
        if len(root) > 48:  # ipc:// paths must fit sun_path (108 bytes)
            root = "/tmp"
        self.dir = tempfile.mkdtemp(prefix="gpud-py-", dir=root)
        self.url = "ipc://%s/gpud.sock" % self.dir
        cmd = [GPUD_BIN, "--backend", BACKEND, "--listen", self.url, "--log-level", "warn"]
        # GPUD_TEST_DEVICES (e.g. 0,1): the suite on several GPUs; a test's own
        # --device comes later and wins
        if os.environ.get("GPUD_TEST_DEVICES") and BACKEND != "cpu":
            cmd += ["--device", os.environ["GPUD_TEST_DEVICES"]]
        if config is not None:
            path = os.path.join(self.dir, "gpud.conf")
            with open(path, "w") as f:
                f.write(config)
            cmd += ["--config", path]
        cmd += list(args)
        self.cmd = cmd
        self.log_path = os.path.join(self.dir, "gpud.log")
        self.log = open(self.log_path, "w")
        self._start()

    def _start(self):
        self.proc = subprocess.Popen(self.cmd, stdout=self.log, stderr=subprocess.STDOUT)
        r = subprocess.run([GPUCTL_BIN, "--url", self.url, "status", "--wait", "60"],
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        if r.returncode != 0:
            self.proc.kill()
            self.proc.wait()
            raise RuntimeError("gpud did not start (%s): %s\n%s" % (
                " ".join(self.cmd), r.stderr, self.read_log()))

    def restart(self):
        """Stops gpud (SIGTERM, exit 0 checked) and starts a new one on the same socket."""
        self.proc.send_signal(signal.SIGTERM)
        rc = self.proc.wait()
        assert rc == 0, "gpud exited %d:\n%s" % (rc, self.read_log())
        self._start()

    def read_log(self):
        with open(self.log_path) as f:
            return f.read()

    def stop(self, check=True):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        rc = self.proc.wait()
        self.log.close()
        log = self.read_log()
        shutil.rmtree(self.dir, ignore_errors=True)
        if check:
            assert rc == 0, "gpud exited %d:\n%s" % (rc, log)


@pytest.fixture(scope="session")
def gpud_server():
    g = Gpud()
    yield g
    g.stop()


@pytest.fixture(scope="session")
def url(gpud_server):
    return gpud_server.url


@pytest.fixture
def client(url):
    import gpud
    c = gpud.connect(url)
    yield c
    c.close()


@pytest.fixture
def start_gpud():
    """start_gpud(config=None, args=()) -> Gpud, stopped (exit 0 checked) after the test."""
    started = []

    def start(config=None, args=()):
        g = Gpud(config, args)
        started.append(g)
        return g

    yield start
    for g in started:
        g.stop()


@pytest.fixture
def rng():
    import numpy as np
    # GPUD_TEST_SEED replays a failure's printed seed
    seed = int(os.environ.get("GPUD_TEST_SEED") or int.from_bytes(os.urandom(4), "little"))
    print("random seed", seed)
    return np.random.default_rng(seed)
