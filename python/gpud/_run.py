"""gpud._run — the Client's kernel runs: run() and run_buffers(), arguments
converted (arrays, buffers, scalars, outputs given), one-trip calls with a
warm plan, and the outputs as numpy arrays or Buffers.

Owners: methods of gpud.Client (this class is one of its bases), shared by
the client's threads under its guard (_enter/_leave); the warm plans
(``_plans``) are the client's. See gpud._client.
"""
from __future__ import annotations

import ctypes
from typing import Any, Dict, Union

import numpy as np

from . import _dtypes, _fast
from ._buffer import Buffer
from ._dtypes import NUMPY, as_array, as_dtype_name, code_of, describe
from ._errors import ArgumentTypeError, Error, InvalidArgument, Status
from ._lib import (ARG_ARRAY, ARG_BOOL, ARG_BUFFER, ARG_F64, ARG_I64, ARG_TEXT, Arg, Array,
                   Output, Result, lib)

# Inputs up to this many bytes in all (outside host regions) travel with the
# run request and the outputs come back in its reply (gpud_call), as gpuctl
# does; bigger ones are uploaded first (over ipc:// through shared memory).
ONE_TRIP_MAX = 1 << 20
MAX_OUTPUTS = 16  # KERNEL_MAX_PARAMS: no kernel has more outputs

_byref = ctypes.byref
_MISS = _fast.MISS
_NAMES = {}


def _name(s):
    b = _NAMES.get(s)
    if b is None:
        if not isinstance(s, str):
            raise ArgumentTypeError("argument names are strings, got %s" % describe(s))
        b = _NAMES[s] = s.encode()
    return b



def _wrap_result(ga):
    """A gpud_call result (malloc'd by the library) as a numpy array."""
    return _fast.result_array(ga.data, ga.nbytes, NUMPY[ga.dtype], tuple(ga.shape[:ga.ndim]))


def _scalar(v, what):
    """(kind, value) of a scalar argument; ArgumentTypeError for what is not one."""
    t = type(v)
    if t is bool or isinstance(v, np.bool_):
        return ARG_BOOL, bool(v)
    if t is int or isinstance(v, np.integer):
        iv = int(v)
        if not _dtypes.INT64_MIN <= iv <= _dtypes.INT64_MAX:
            raise ArgumentTypeError("%s: expected an integer within int64, got %d" % (what, iv))
        return ARG_I64, iv
    if t is float or isinstance(v, np.floating):
        fv = float(v)
        if t is not float and v.dtype.itemsize > 8 and not (fv == v or fv != fv):
            raise ArgumentTypeError("%s: expected a float64 number, got %s, which float64 "
                                    "cannot hold exactly" % (what, describe(v)))
        return ARG_F64, fv
    if t is str:
        return ARG_TEXT, v.encode()
    if isinstance(v, np.ndarray) and v.ndim == 0:
        if code_of(v.dtype) or v.dtype.kind == "b":
            return _scalar(v[()], what)
        raise ArgumentTypeError("%s: expected a number, got %s" % (what, describe(v)))
    if isinstance(v, (np.dtype, type)):
        return ARG_TEXT, as_dtype_name(v, what).encode()
    raise ArgumentTypeError("%s: expected a bool, int, float or dtype name, got %s"
                            % (what, describe(v)))



class Runs:
    """The Client's kernel runs (a base of gpud.Client)."""

    # --- running kernels ----------------------------------------------------------------

    def run(self, kernel: str, /, **args: Any) -> Union[np.ndarray, Buffer, Dict[str, Any]]:
        """Runs a kernel of gpud and returns its output(s) as numpy arrays.

        Arguments by name, as ``client.kernels[kernel]`` lists them:
        - arrays: numpy arrays (or lists, or any array-like) of float32,
          float64, int32 or int64; non-contiguous and byte-swapped arrays are
          converted first; any other dtype raises ArgumentTypeError (a
          TypeError) naming the argument, what it takes and what it got;
        - gpud.Buffer objects: data already in gpud, not copied;
        - scalars: bool, int (int64), float, and dtypes by name ("float32",
          numpy.float32); None leaves an optional argument out.
        - outputs: by their name, or ``out=`` for a kernel's one output (a
          dict for several): a gpud.Buffer is written in gpud and returned
          as it is; a numpy array receives the result.
        Returns one numpy array, or a dict {name: array} for several
        outputs. Inputs up to 1 MiB in all (not counting arrays in host
        memory from empty()/asarray(), which go by reference) go with the
        request and the outputs come back in its reply: one round trip.
        """
        if type(kernel) is str:
            key = (kernel, *args)
            plan = self._plans.pop(key, None)
            if plan is not None:
                try:
                    r = plan.run(self, args)
                finally:
                    self._plans[key] = plan
                if r is not _MISS:
                    return r
        return self._run(kernel, args, True)

    def run_buffers(self, kernel: str, /, **args: Any) -> Union[Buffer, Dict[str, Buffer]]:
        """As run(), but the outputs stay in gpud: gpud.Buffer objects (a dict for several)."""
        return self._run(kernel, args, False)

    def _run(self, kernel, args, download):
        if not isinstance(kernel, str):
            raise ArgumentTypeError("run: the kernel is named by a str, got %s"
                                    % describe(kernel))
        k = self._kernels.get(kernel) if self._kernels is not None else None
        if k is None and not self._closed:
            k = self._kernel(kernel)
        if "out" in args and (k is None or "out" not in k.by_name):
            args = self._map_out(kernel, k, args)
        c = self._enter()
        try:
            return self._run_on(c, kernel, k, args, download)
        finally:
            self._leave()

    @staticmethod
    def _map_out(kernel, k, args):
        args = dict(args)
        out = args.pop("out")
        if out is None:
            return args
        if isinstance(out, dict):
            args.update(out)
        elif k is not None and len(k.outputs) == 1:
            args[k.outputs[0]] = out
        else:
            raise InvalidArgument(
                "run %s: out= names the kernel's one output, but it has %s; pass a dict "
                "{name: Buffer} or each output by name" % (
                    kernel, "outputs " + ", ".join(k.outputs) if k else "no known outputs"))
        return args

    def _run_on(self, c, kernel, k, args, download):
        argv, n, keep, arrays, given_out, np_out, inline = self._convert(kernel, k, args)
        one_trip = download and not given_out and (
            inline <= ONE_TRIP_MAX or (not self._shm and inline <= self._server.max_message_size))
        if one_trip:
            res = self._call(c, kernel, k, argv, n, arrays, keep)
            if res is not None:
                if not np_out and k is not None and n == len(args):
                    self._plan_for(kernel, k, args, argv, arrays, res)
                return self._outputs(kernel, res, np_out)
        return self._run_buffers(c, kernel, k, argv, n, arrays, given_out, np_out, download)

    def _convert(self, kernel, k, args):
        """The gpud_arg array of a run's arguments: (argv, n, keep, arrays, given_out,
        np_out, inline); arrays are left for the caller to send inline or upload."""
        n = len(args)
        argv = (Arg * max(n, 1))()
        keep = []            # what the C call points to
        arrays = []          # (index, ndarray, code, in host memory)
        given_out = {}       # output name -> Buffer passed in
        np_out = {}          # output name -> numpy array to fill
        inline = 0
        params = k.by_name if k is not None else {}
        i = 0
        for name, v in args.items():
            p = params.get(name)
            what = "argument '%s'" % name
            if v is None:
                if p is not None and not p.optional:
                    raise ArgumentTypeError("run %s: %s is required, got None" % (kernel, what))
                continue
            ca = argv[i]
            ca.name = _name(name)
            if isinstance(v, Buffer):
                ca.kind = ARG_BUFFER
                ca.v.buffer = v.handle
                if p is not None and p.role == "out":
                    given_out[name] = v
            elif p is not None and p.role == "out" and isinstance(v, np.ndarray):
                np_out[name] = v
                continue
            elif (p is not None and p.role == "scalar") or isinstance(
                    v, (bool, int, float, str, np.generic, np.dtype, type)):
                if isinstance(v, np.ndarray) and v.ndim > 0:
                    raise ArgumentTypeError("run %s: %s: expected a scalar (%s), got %s" % (
                        kernel, what, p.type or "a number", describe(v)))
                kind, val = _scalar(v, "run %s: %s" % (kernel, what))
                ca.kind = kind
                if kind == ARG_F64:
                    ca.v.f64 = val
                elif kind == ARG_I64:
                    ca.v.i64 = val
                elif kind == ARG_BOOL:
                    ca.v.b = val
                else:
                    keep.append(val)
                    ca.v.text = val
            else:
                a, code = as_array(v, "run %s: %s" % (kernel, what), p.mask if p else 0)
                inhost = self._in_host_memory(a)
                if not inhost:
                    inline += a.nbytes
                arrays.append((i, a, code, inhost))
            i += 1
        return argv, i, keep, arrays, given_out, np_out, inline

    def _plan_for(self, kernel, k, args, argv, arrays, res):
        """Keeps a _fast.Plan for later runs like this one, if its arguments allow one."""
        key = (kernel, *args)
        if key in self._plans or len(self._plans) >= 64:
            return
        dts = {i: a.dtype for i, a, _, _ in arrays}
        items = []
        shapes = ()
        for i, name in enumerate(args):
            kind = argv[i].kind
            v = args[name]
            if kind == ARG_ARRAY:
                if type(v) is not np.ndarray or v.dtype is not dts[i] or v is not \
                        [a for j, a, _, _ in arrays if j == i][0]:
                    return  # converted on the way: the fast path would take it as it is
                shapes += (v.shape,)
            elif kind not in (ARG_F64, ARG_I64, ARG_BOOL) or type(v) not in (float, int, bool):
                return
            items.append((name, kind, dts.get(i)))
        limit = ONE_TRIP_MAX if self._shm else self._server.max_message_size
        self._plans[key] = _fast.Plan(self, kernel, items, limit, shapes, res)

    @staticmethod
    def _inline(argv, arrays, keep):
        """Makes the array arguments travel with the request (gpud_arg_array)."""
        for i, a, code, _ in arrays:
            ga = Array()
            ga.dtype = code
            ga.ndim = a.ndim
            for d, s in enumerate(a.shape):
                ga.shape[d] = s
            ga.data = a.ctypes.data if a.nbytes else None
            ga.nbytes = a.nbytes
            keep.append(ga)
            argv[i].kind = ARG_ARRAY
            argv[i].v.array = ctypes.pointer(ga)

    def _call(self, c, kernel, k, argv, n, arrays, keep):
        self._inline(argv, arrays, keep)
        cap = len(k.outputs) if k is not None else MAX_OUTPUTS
        res = (Result * max(cap, 1))()
        nout = ctypes.c_size_t()
        st = lib.gpud_call(c, _name(kernel), argv, n, res, cap, _byref(nout), None)
        if st != 0:
            if st == Status.E2BIG:  # outputs too big for one reply: run on buffers instead
                return None
            self._fail(st)
        return [(res[j].name.decode(), _wrap_result(res[j].array)) for j in range(nout.value)]

    def _run_buffers(self, c, kernel, k, argv, n, arrays, given_out, np_out, download):
        temps = []
        ok = False
        try:
            for i, a, code, _ in arrays:
                h = self._alloc_raw(c, code, a, kernel)
                temps.append(h)
                argv[i].kind = ARG_BUFFER
                argv[i].v.buffer = h
            cap = MAX_OUTPUTS
            outs = (Output * cap)()
            nout = ctypes.c_size_t()
            st = lib.gpud_run(c, _name(kernel), argv, n, outs, cap, _byref(nout), None)
            if st != 0:
                self._fail(st)
            given = {b.handle for b in given_out.values()}
            res = []
            made = []
            for j in range(nout.value):
                o = outs[j]
                name = o.name.decode()
                if o.handle in given:
                    res.append((name, given_out[name]))
                    continue
                made.append(o.handle)
                dt = NUMPY[o.dtype]
                shape = tuple(o.shape[:o.ndim])
                if download:
                    arr = np.empty(shape, dt)
                    try:
                        self._get_into(c, o.handle, arr)
                    except Error:
                        temps.extend(made)
                        made = []
                        raise
                    res.append((name, arr))
                else:
                    res.append((name, Buffer(self, o.handle, dt, shape)))
            if download:
                temps.extend(made)
            else:
                self._owned.update(made)
            ok = True
        finally:
            if temps:
                hs = (ctypes.c_uint64 * len(temps))(*temps)
                st = lib.gpud_free(c, hs, len(temps))
                if ok and st != 0:
                    self._fail(st)
        return self._outputs(kernel, res, np_out)

    @staticmethod
    def _outputs(kernel, res, np_out):
        if np_out:
            for j, (name, arr) in enumerate(res):
                dst = np_out.get(name)
                if dst is None:
                    continue
                if dst.shape != arr.shape or dst.dtype != arr.dtype:
                    raise InvalidArgument(
                        "run %s: output '%s' is %s %s, but the array given for it is %s %s"
                        % (kernel, name, arr.dtype, arr.shape, dst.dtype, dst.shape))
                np.copyto(dst, arr)
                res[j] = (name, dst)
        if len(res) == 1:
            return res[0][1]
        return dict(res)
