"""Several devices in one gpud (the cpu backend's simulated ones, whatever the suite's backend):
Client.set_device pins uploads and runs to a device, None lets gpud place them, a device gpud
lacks is an InvalidArgument naming the ones it has, and status shows each device's runs."""
import numpy as np
import pytest

import gpud


@pytest.fixture
def two(start_gpud):
    return start_gpud(args=("--backend", "cpu", "--cpu-devices", "2"))


def test_set_device_places_uploads_and_runs(two, rng):
    with gpud.Client(two.url) as c:
        assert [d["index"] for d in c.server.devices] == [0, 1]
        x = rng.uniform(-1, 1, 1000)
        c.set_device(1)
        b = c.upload(x)
        out = c.run("add", x=b, y=b)
        np.testing.assert_array_equal(np.asarray(out), 2 * x)
        st = c.status()
        assert st["degraded"] is False
        runs = {d["index"]: d["runs_total"] for d in st["devices"]}
        assert runs[1] >= 1 and runs[0] == 0, runs
        # placed: the run goes where its (pinned) input is
        c.set_device(None)
        out = c.run("mul", x=b, y=b)
        np.testing.assert_array_equal(np.asarray(out), x * x)
        runs = {d["index"]: d["runs_total"] for d in c.status()["devices"]}
        assert runs[0] == 0, runs
        c.set_device(5)
        with pytest.raises(gpud.InvalidArgument, match="device 5: this gpud has devices 0, 1"):
            c.upload(x)
        c.set_device(0)
        with pytest.raises(gpud.InvalidArgument, match="argument 'x' is pinned to device 1"):
            c.run("add", x=b, y=b)
        with pytest.raises(gpud.ArgumentTypeError, match="set_device: expected a device"):
            c.set_device(-2)
