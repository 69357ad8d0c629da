"""The package's generated help text, word for word: kernel docstrings (built by
gpud._kernels from gpud's kernel list), gpud.signal.lombscargle's, and the
message of gpud.ClientClosed."""
import pydoc

import numpy as np
import pytest

import gpud
import gpud.signal


def test_kernel_docstring_says_optional_once(client):
    doc = client.kernels["lombscargle"].docstring()
    lines = doc.splitlines()
    for want in ("freqs : float32|float64 1-d array, optional",
                 "precenter : bool scalar, default False",
                 "normalize : power|normalize|amplitude or bool, default 'power'",
                 "weights : float32|float64 1-d array, optional",
                 "nf : int64 scalar, optional",
                 "method : auto|direct|nufft, default 'auto'"):
        assert want in lines, (want, doc)
    types = [ln for ln in lines if " : " in ln and not ln.startswith(" ")]
    assert len(types) >= 14, doc
    for ln in types:
        assert "(optional)" not in ln and "(default " not in ln, ln
    # every kernel's
    for name, k in client.kernels.items():
        d = k.docstring()
        assert "(optional), optional" not in d and "), default " not in d, (name, d)
    assert client.k.lombscargle.__doc__ == doc


def test_signal_help_says_it_once():
    text = pydoc.render_doc(gpud.signal.lombscargle, renderer=pydoc.plaintext)
    assert "optional), optional" not in text and "), default" not in text
    assert "lombscargle(x, y, freqs," in text
    assert "legacy : bool or None" in text


def test_client_closed_message(url):
    c = gpud.connect(url)
    c.close()
    with pytest.raises(gpud.ClientClosed) as ei:
        c.run("lombscargle", x=np.ones(2), y=np.ones(2), freqs=np.ones(2))
    assert str(ei.value) == "the gpud client is closed (it was connected to %s)" % url
    assert c.url == url
    assert str(gpud.ClientClosed()) == "the gpud client is closed"
    assert str(gpud.ClientClosed("the gpud client is closed (ipc:///x)")) == \
        "the gpud client is closed (ipc:///x)"
