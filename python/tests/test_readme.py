"""The Python guide's example, run as a user would, its output against the guide's.

The ```python block of docs/python.md (the Python package's guide) runs in a fresh interpreter
with GPUD_URL set to the fixture's gpud; what it prints must match the indented
block after "It prints" line by line ("..." stands for anything).
"""
import os
import re
import subprocess
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), os.pardir, os.pardir))


def example():
    section = open(os.path.join(ROOT, "docs", "python.md")).read()
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    prints = re.search(r"It prints\n\n((?:    .*\n)+)", section).group(1)
    return code, [line[4:] for line in prints.splitlines()]


def test_readme_python_example(url):
    code, expected = example()
    env = dict(os.environ, GPUD_URL=url,
               PYTHONPATH=os.path.join(ROOT, "python") + os.pathsep + os.environ.get(
                   "PYTHONPATH", ""))
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    got = r.stdout.splitlines()
    assert len(got) == len(expected), (got, expected)
    for g, e in zip(got, expected):
        pattern = ".*".join(re.escape(part) for part in e.split("..."))
        assert re.fullmatch(pattern, g), (g, e)
