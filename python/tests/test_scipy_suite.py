"""scipy's own lombscargle tests, run through gpud.signal.lombscargle.

Imports the installed scipy's scipy.signal.tests.test_spectral, replaces the
module's ``lombscargle`` with gpud's drop-in (for the installed scipy
version, on the test's client) and collects scipy's TestLombscargle as
TestScipyLombscargle: every lombscargle test of that scipy runs through gpud
and must pass (values, exceptions, warnings, shapes, untouched inputs).

$GPUD_SCIPY_TESTS=VERSION=PATH adds the TestLombscargle of another scipy's
test_spectral.py (e.g. 1.18=/path/to/scipy/signal/tests/test_spectral.py),
run against gpud.signal.lombscargle_for(VERSION), as TestOtherScipyLombscargle:
the file is not imported as a whole (its other imports need that scipy);
its import lines are run one by one, a name the installed scipy lacks
replaced by a numpy stand-in (xp_assert_close, xp_assert_equal) or a
placeholder that fails the test using it, then the class is defined from
its source.

Skips (saying why) where scipy or its tests are not installed (pip wheels
built without tests).
"""
import ast
import functools
import os

import numpy as np
import pytest

import gpud.signal

scipy = pytest.importorskip("scipy", reason="scipy is not installed")
try:
    from scipy.signal.tests import test_spectral as scipy_tests
except ImportError as e:  # wheels without tests, or a module needing what is missing
    pytest.skip("scipy %s's tests are not installed or do not import "
                "(scipy.signal.tests.test_spectral: %s)" % (scipy.__version__, e),
                allow_module_level=True)
if not hasattr(scipy_tests, "TestLombscargle"):
    pytest.skip("scipy %s's test_spectral has no TestLombscargle" % scipy.__version__,
                allow_module_level=True)


def _on(client, version=None):
    f = gpud.signal.lombscargle if version is None else gpud.signal.lombscargle_for(version)
    return functools.partial(f, client=client)


class TestScipyLombscargle(scipy_tests.TestLombscargle):
    """scipy's TestLombscargle (installed scipy %s), lombscargle being gpud's."""

    @pytest.fixture(autouse=True)
    def _gpud_lombscargle(self, client, monkeypatch):
        monkeypatch.setattr(scipy_tests, "lombscargle", _on(client))


def test_the_suite_is_there():
    """The class collected holds scipy's tests (not an empty shell)."""
    names = [n for n in dir(TestScipyLombscargle) if n.startswith("test_")]
    assert len(names) >= 5, names


# --- another scipy's test file ($GPUD_SCIPY_TESTS=VERSION=PATH) ---

def _xp_assert_close(actual, desired, *, rtol=None, atol=0, check_dtype=True,
                     check_shape=True, check_0d=True, err_msg="", xp=None, **_):
    actual, desired = np.asarray(actual), np.asarray(desired)
    if check_shape:
        assert actual.shape == desired.shape, (actual.shape, desired.shape)
    if check_dtype:
        assert actual.dtype == desired.dtype, (actual.dtype, desired.dtype)
    if rtol is None:
        rtol = np.finfo(actual.dtype).eps ** 0.5 * 4 if actual.dtype.kind in "fc" else 1e-7
    np.testing.assert_allclose(actual, desired, rtol=rtol, atol=atol, err_msg=err_msg)


def _xp_assert_equal(actual, desired, *, check_dtype=True, check_shape=True, err_msg="",
                     **_):
    actual, desired = np.asarray(actual), np.asarray(desired)
    if check_shape:
        assert actual.shape == desired.shape, (actual.shape, desired.shape)
    if check_dtype:
        assert actual.dtype == desired.dtype, (actual.dtype, desired.dtype)
    np.testing.assert_array_equal(actual, desired, err_msg=err_msg)


_STANDINS = {"xp_assert_close": _xp_assert_close, "xp_assert_equal": _xp_assert_equal}


def _missing(name, why):
    def missing(*a, **k):
        raise AssertionError("%s is not available with the installed scipy (%s)"
                             % (name, why))
    return missing


def _load_class(path):
    """TestLombscargle of the test file at path, in a namespace of its own."""
    with open(path) as f:
        tree = ast.parse(f.read(), path)
    ns = {"__name__": "scipy_other_test_spectral", "__file__": path}
    cls = None
    for node in tree.body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            code = compile(ast.Module(body=[node], type_ignores=[]), path, "exec")
            try:
                exec(code, ns)
            except ImportError as e:
                for alias in node.names:
                    name = alias.asname or alias.name.split(".")[0]
                    ns[name] = _STANDINS.get(alias.name, _missing(alias.name, e))
        elif isinstance(node, ast.ClassDef) and node.name == "TestLombscargle":
            cls = node
    if cls is None:
        raise AssertionError("%s has no class TestLombscargle" % path)
    exec(compile(ast.Module(body=[cls], type_ignores=[]), path, "exec"), ns)
    return ns


_OTHER = os.environ.get("GPUD_SCIPY_TESTS")
if _OTHER:
    _version, _, _path = _OTHER.partition("=")
    _other_ns = _load_class(_path)

    class TestOtherScipyLombscargle(_other_ns["TestLombscargle"]):
        """TestLombscargle of $GPUD_SCIPY_TESTS, lombscargle being lombscargle_for(VERSION)."""

        @pytest.fixture(autouse=True)
        def _gpud_lombscargle(self, client, monkeypatch):
            monkeypatch.setitem(_other_ns, "lombscargle", _on(client, _version))
