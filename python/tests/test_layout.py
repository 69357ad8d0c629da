"""The ctypes structs of gpud/_lib.py against the C headers: sizes and every field's offset.

Compiles a small C program with the include/ of this tree (needs cc) and
compares with ctypes.sizeof and each field's .offset.
"""
import ctypes
import os
import shutil
import subprocess

import pytest

from gpud import _lib as L

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), os.pardir, os.pardir))
STRUCTS = {
    "gpud_array": L.Array, "gpud_options": L.Options, "gpud_device_info": L.DeviceInfo,
    "gpud_server_info": L.ServerInfo, "gpud_arg": L.Arg, "gpud_output": L.Output,
    "gpud_run_info": L.RunInfo, "gpud_param_info": L.ParamInfo,
    "gpud_kernel_info": L.KernelInfo, "gpud_kernel_list": L.KernelList,
    "gpud_result": L.Result, "gpud_kernel_spec": L.KernelSpec,
    "gpud_buffer_info": L.BufferInfo, "gpud_variant_info": L.VariantInfo,
    "gpud_session_info": L.SessionInfo, "gpud_daemon_status": L.DaemonStatus,
}


def test_struct_layouts(tmp_path):
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler")
    lines = ["#include <stddef.h>", "#include <stdio.h>", "#include <gpud/client.h>",
             "int main(void) {"]
    for cname, cls in STRUCTS.items():
        lines.append('printf("%s %%zu\\n", sizeof(%s));' % (cname, cname))
        for f in cls._fields_:
            lines.append('printf("%s.%s %%zu\\n", offsetof(%s, %s));'
                         % (cname, f[0], cname, f[0]))
    lines.append("return 0; }")
    src = tmp_path / "layout.c"
    src.write_text("\n".join(lines))
    exe = tmp_path / "layout"
    subprocess.run([cc, "-I", os.path.join(ROOT, "include"), str(src), "-o", str(exe)],
                   check=True)
    got = dict(line.split() for line in subprocess.run(
        [str(exe)], check=True, capture_output=True, text=True).stdout.splitlines())
    for cname, cls in STRUCTS.items():
        assert int(got[cname]) == ctypes.sizeof(cls), cname
        for f in cls._fields_:
            assert int(got["%s.%s" % (cname, f[0])]) == getattr(cls, f[0]).offset, \
                (cname, f[0])


def test_statuses_match_header():
    import re
    import gpud
    text = open(os.path.join(ROOT, "include", "gpud", "client.h")).read()
    found = dict(re.findall(r"GPUD_(E[A-Z0-9_]+|OK) = (\d+)", text))
    assert found and {k: int(v) for k, v in found.items()} == {
        s.name: s.value for s in gpud.Status}
