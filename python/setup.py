"""The rest of pyproject.toml that needs code: the version and the wheel's tags.

The version is include/gpud/version.h's (GPUD_WHEEL_VERSION when set, as
make wheel sets it). The package calls libgpud-client through ctypes, so the
wheel is py3-none-PLATFORM: any Python 3, one platform, given by
GPUD_WHEEL_PLAT (make wheel: manylinux_2_X_x86_64 from the library's newest
GLIBC_ symbol version) or else the build machine's (linux_x86_64).
"""
import os
import re

from setuptools import Distribution, setup
from wheel.bdist_wheel import bdist_wheel


def version():
    v = os.environ.get("GPUD_WHEEL_VERSION")
    if v:
        return v
    here = os.path.dirname(os.path.abspath(__file__))
    with open(os.path.join(here, os.pardir, "include", "gpud", "version.h")) as f:
        text = f.read()
    return ".".join(re.search(r"#define GPUD_VERSION_%s +(\d+)" % p, text).group(1)
                    for p in ("MAJOR", "MINOR", "PATCH"))


class WithLibrary(Distribution):
    """A distribution with a shared library in it: installed to platlib, the
    wheel not pure (Root-Is-Purelib: false)."""

    def has_ext_modules(self):
        return True


class PlatformWheel(bdist_wheel):
    def get_tag(self):
        _, _, plat = super().get_tag()
        return "py3", "none", os.environ.get("GPUD_WHEEL_PLAT") or plat


here = os.path.dirname(os.path.abspath(__file__))
if not os.path.exists(os.path.join(here, "gpud", "_libs", "libgpud-client.so.0")):
    raise SystemExit("setup.py: gpud/_libs/libgpud-client.so.0 is missing: the wheel is built "
                     "by `make wheel` in gpud's source tree, which puts it there")

setup(version=version(), distclass=WithLibrary, cmdclass={"bdist_wheel": PlatformWheel})
