"""gpud._custom — custom kernels written as CuPy users write them.

    add_scaled = gpud.ElementwiseKernel("float32 x, float32 y, float32 a", "float32 z",
                                        "z = a * x + y", "add_scaled")
    z = add_scaled(x, y, 0.5)                      # numpy in, numpy out

    l2 = gpud.ReductionKernel("float32 x", "float32 y", "x * x", "a + b", "y = sqrt(a)", "0",
                              "l2norm")
    n = l2(x)                                      # 0-d; l2(m, axis=-1): one per row

    scale = gpud.RawKernel(source, "scale", signature="x:in f32[], y:out f32[], s:f32, n:i64")
    scale((blocks,), (threads,), (x, y, 2.0, n))   # y (numpy or gpud.Buffer) is written

A kernel is registered in gpud (compiled there by NVRTC, kept for the
tenant) on its first call through a client, under its name and a hash of
everything that defines it (``add_scaled_3f2c...``): a later process with the
same kernel finds it registered and does not compile again; an edited kernel
gets a new name. Kernels are registered unpinned: they stay registered for
the tenant until it holds as many custom kernels as its custom_kernels quota
(gpud.conf, default 256) and registers another, when gpud evicts the least
recently used unpinned one (`gpuctl kernel add` registers pinned kernels,
which stay). A kernel evicted meanwhile is registered again on its next
call. Kernel.unregister(client) removes one.

gpud's custom kernels take concrete dtypes (float32, float64, int32, int64
and their short forms f32 ...): CuPy's type placeholders ("T x"), raw
arguments and preamble, loop_prep and after_loop are refused with
gpud.Unsupported when the kernel is made.
"""
from __future__ import annotations

import hashlib
import re
import threading
from typing import Any, Optional, Sequence, Tuple

import numpy as np

from ._client import Buffer, Client
from ._kernels import Kernel
from ._default import default_client
from ._dtypes import describe
from ._errors import ArgumentTypeError, InvalidArgument, NotFound, Status, Unsupported
from ._lib import REGISTER_UNPINNED, KernelSpec, ReductionSpec

_DTYPES = {"float32", "float64", "int32", "int64", "f32", "f64", "i32", "i64"}
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


def _parse_ew(text, what, who="ElementwiseKernel"):
    """'float32 x, float32 y' -> ['x', 'y'] after checking the types are gpud's."""
    if not isinstance(text, str):
        raise ArgumentTypeError("%s: %s must be a str such as 'float32 x, "
                                "float32 y', got %s" % (who, what, describe(text)))
    names = []
    for item in text.split(","):
        parts = item.split()
        if len(parts) != 2:
            raise InvalidArgument("%s: %s: expected 'DTYPE NAME' items, got %r"
                                  % (who, what, item.strip()))
        t, n = parts
        if t not in _DTYPES:
            raise Unsupported(
                "%s: %s: %r has type %r; gpud's custom kernels take "
                "concrete dtypes (float32, float64, int32, int64), not CuPy's placeholders or "
                "raw arguments" % (who, what, item.strip(), t))
        names.append(n)
    return names


def _flag_options(options, what):
    """CuPy's NVRTC options as gpud's spec fields: (fast_math, max_registers)."""
    fast, maxreg = 0, 0
    if isinstance(options, str):
        options = (options,)
    for o in options:
        if o in ("--use_fast_math", "-use_fast_math"):
            fast = 1
        elif re.match(r"--?maxrregcount[= ]\d+\Z", o):
            maxreg = int(re.split(r"[= ]", o)[1])
        else:
            raise Unsupported("%s: option %r is not one gpud passes to NVRTC (it takes "
                              "--use_fast_math and --maxrregcount=N)" % (what, o))
    return fast, maxreg


class _Custom:
    """What both kinds share: the registered name and registering per client."""

    _spec_class = KernelSpec

    def __init__(self, name, fields):
        if not isinstance(name, str) or not _IDENT.match(name):
            raise InvalidArgument("%s: the name must be a C identifier, got %r"
                                  % (type(self).__name__, name))
        self.name = name
        digest = hashlib.sha256(repr(sorted(fields.items())).encode()).hexdigest()[:16]
        self.registered_name = "%s_%s" % (name[:40], digest)
        self._fields = fields
        self._ready = set()  # ids of clients where it is registered
        self._lock = threading.Lock()

    def _spec(self):
        spec = self._spec_class()
        keep = []
        for k, v in self._fields.items():
            if isinstance(v, str):
                v = v.encode()
                keep.append(v)
            setattr(spec, k, v)
        spec.name = self.registered_name.encode()
        return spec, keep

    def kernel(self, client: Optional[Client] = None) -> Tuple[Client, Kernel]:
        """The gpud.Kernel as registered on client (registering it first if need be)."""
        c = client if client is not None else default_client()
        key = id(c)
        for _ in range(2):
            if key not in self._ready:
                with self._lock:
                    if c._kernel(self.registered_name) is None:
                        spec, keep = self._spec()
                        try:
                            c._register(spec, keep, REGISTER_UNPINNED)
                        except InvalidArgument:
                            # Registered meanwhile by another client of this tenant?
                            if c._kernel(self.registered_name) is None:
                                raise
                    self._ready.add(key)
            k = c._kernel(self.registered_name)
            if k is not None:
                return c, k
            self._ready.discard(key)  # evicted at the custom_kernels quota: again
        raise InvalidArgument("%s: registered in gpud, but gpud does not list it"
                              % self.registered_name)

    def _run(self, c, kw):
        """c.run of the registered kernel; registered again (once) if gpud evicted it."""
        try:
            return c.run(self.registered_name, **kw)
        except NotFound as e:
            if getattr(e, "status", None) != Status.EUNKNOWN_KERNEL or id(c) not in self._ready:
                raise
        self._ready.discard(id(c))
        c._kernels = None  # the cached list still names it
        self.kernel(c)
        return c.run(self.registered_name, **kw)

    def unregister(self, client: Optional[Client] = None) -> None:
        """Removes the kernel from gpud (for the client's tenant)."""
        c = client if client is not None else default_client()
        c.unregister(self.registered_name)
        self._ready.discard(id(c))


class ElementwiseKernel(_Custom):
    """cupy.ElementwiseKernel's form: in_params, out_params, the operation, a name.

    Called with the inputs (arrays, gpud.Buffers or scalars, which
    broadcast) in in_params' order, optionally followed by outputs (numpy
    arrays to fill, or gpud.Buffers to write in gpud); returns the output
    (a tuple for several, as CuPy does). Arrays must all have as many
    elements; outputs take the shape of the first array input.
    Keyword client= runs it on that client instead of the default one.
    gpud's own options: block (threads per block), blocks_per_sm,
    max_registers, fast_math (or options=('--use_fast_math',)).
    """

    def __init__(self, in_params, out_params, operation, name="kernel", reduce_dims=True,
                 preamble="", no_return=False, return_tuple=False, loop_prep="",
                 after_loop="", options=(), *, block=0, blocks_per_sm=0, fast_math=False,
                 max_registers=0):
        for what, v in (("preamble", preamble), ("loop_prep", loop_prep),
                        ("after_loop", after_loop)):
            if v:
                raise Unsupported("ElementwiseKernel: %s is not supported by gpud's "
                                  "elementwise kernels (the operation is the loop body)" % what)
        if not isinstance(operation, str) or not operation.strip():
            raise InvalidArgument("ElementwiseKernel: operation must be a non-empty str of "
                                  "CUDA C, got %s" % describe(operation))
        self.in_names = _parse_ew(in_params, "in_params")
        self.out_names = _parse_ew(out_params, "out_params")
        fast, maxreg = _flag_options(options, "ElementwiseKernel")
        self.no_return = no_return
        self.return_tuple = return_tuple
        super().__init__(name, {
            "elementwise": 1, "source": operation, "in_params": in_params,
            "out_params": out_params, "block": int(block), "blocks_per_sm": int(blocks_per_sm),
            "fast_math": int(bool(fast_math) or fast),
            "max_registers": int(max_registers or maxreg)})

    def __call__(self, *args: Any, client: Optional[Client] = None) -> Any:
        nin, nout = len(self.in_names), len(self.out_names)
        if len(args) not in (nin, nin + nout):
            raise ArgumentTypeError(
                "%s: takes %d inputs (%s), optionally followed by %d outputs (%s), got %d "
                "arguments" % (self.name, nin, ", ".join(self.in_names), nout,
                               ", ".join(self.out_names), len(args)))
        c, _ = self.kernel(client)
        kw = dict(zip(self.in_names + self.out_names, args))
        if len(args) == nin + nout:
            for n in self.out_names:
                if not isinstance(kw[n], (np.ndarray, Buffer)):
                    raise ArgumentTypeError("%s: output '%s' must be a numpy array or a "
                                            "gpud.Buffer, got %s" % (self.name, n, describe(kw[n])))
        res = self._run(c, kw)
        if self.no_return:
            return None
        if isinstance(res, dict):
            return tuple(res[n] for n in self.out_names)
        return (res,) if self.return_tuple else res

    def __repr__(self):
        return "<gpud.ElementwiseKernel %s (%s) -> (%s)>" % (
            self.name, ", ".join(self.in_names), ", ".join(self.out_names))


class RawKernel(_Custom):
    """cupy.RawKernel's form: CUDA C code and the extern "C" __global__ function's name.

    gpud must know the arguments, so a signature is required:
    ``"x:in f32[], y:out f32[], s:f32, n:i64"`` (arrays in or out with a
    dtype, scalars by dtype), in the function's order. Called as CuPy's:
    ``kernel(grid, block, args)`` with 1-d grid and block (ints or 1-tuples)
    and args in the signature's order: inputs as numpy arrays, gpud.Buffers
    or scalars, outputs as gpud.Buffers (written in gpud) or numpy arrays
    (filled in place: uploaded first, so the kernel may read them). Made
    with blocks_per_sm=K, gpud launches SMs x K blocks of block threads
    itself: call kernel(None, None, args) or kernel(args=args). Returns None.
    """

    def __init__(self, code, name, options=(), backend="nvrtc", *, signature, block=0,
                 blocks_per_sm=0, max_registers=0, fast_math=False):
        if backend != "nvrtc":
            raise Unsupported("RawKernel: gpud compiles with NVRTC only, got backend=%r"
                              % (backend,))
        if not isinstance(code, str) or not code.strip():
            raise InvalidArgument("RawKernel: code must be a non-empty str of CUDA C, got %s"
                                  % describe(code))
        if not isinstance(signature, str):
            raise ArgumentTypeError("RawKernel: signature must be a str such as 'x:in f32[], "
                                    "n:i64', got %s" % describe(signature))
        fast, maxreg = _flag_options(options, "RawKernel")
        self.blocks_per_sm = int(blocks_per_sm)
        super().__init__(name, {
            "elementwise": 0, "source": code, "entry": name, "signature": signature,
            "block": int(block), "blocks_per_sm": self.blocks_per_sm,
            "fast_math": int(bool(fast_math) or fast),
            "max_registers": int(max_registers or maxreg)})

    @staticmethod
    def _dim(v, what):
        if isinstance(v, tuple):
            if not v or any(d != 1 for d in v[1:]):
                raise Unsupported("RawKernel: %s %r: gpud launches 1-d grids and blocks"
                                  % (what, v))
            v = v[0]
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
            raise InvalidArgument("RawKernel: %s must be a positive int or a 1-tuple, got %s"
                                  % (what, describe(v)))
        return int(v)

    def __call__(self, grid: Any = None, block: Any = None, args: Sequence[Any] = (), *,
                 shared_mem: int = 0, client: Optional[Client] = None) -> None:
        if shared_mem:
            raise Unsupported("RawKernel: gpud does not launch with dynamic shared memory "
                              "(shared_mem=%r)" % (shared_mem,))
        c, k = self.kernel(client)
        params = [p for p in k.params if not p.name.startswith("_")]
        if not isinstance(args, (tuple, list)) or len(args) != len(params):
            raise ArgumentTypeError("%s: args must be a tuple of %d (%s), got %s" % (
                self.name, len(params), ", ".join(p.name for p in params), describe(args)))
        kw = {}
        if self.blocks_per_sm:
            if grid is not None or block is not None:
                raise InvalidArgument("%s: made with blocks_per_sm=%d, gpud chooses the launch;"
                                      " pass grid and block as None" % (self.name,
                                                                        self.blocks_per_sm))
        else:
            if grid is None or block is None:
                raise InvalidArgument("%s: give grid and block (or make the kernel with "
                                      "blocks_per_sm)" % self.name)
            kw["_grid"] = self._dim(grid, "grid")
            kw["_block"] = self._dim(block, "block")
        fill = []
        try:
            for p, v in zip(params, args):
                if p.role == "out" and isinstance(v, np.ndarray):
                    b = c.upload(v)
                    fill.append((v, b))
                    v = b
                elif p.role == "out" and not isinstance(v, Buffer):
                    raise ArgumentTypeError("%s: output '%s' must be a gpud.Buffer or a numpy "
                                            "array, got %s" % (self.name, p.name, describe(v)))
                kw[p.name] = v
            self._run(c, kw)
            for arr, b in fill:
                arr[...] = b.get().reshape(arr.shape)
        finally:
            for _, b in fill:
                b.free()
        return None

    def __repr__(self):
        return "<gpud.RawKernel %s %s>" % (self.name, self._fields["signature"])


class ReductionKernel(_Custom):
    """cupy.ReductionKernel's form: map_expr, reduce_expr (of a and b), post_map_expr, identity.

    ``ReductionKernel(in_params, out_params, map_expr, reduce_expr, post_map_expr, identity,
    name='reduce_kernel', reduce_type=None, reduce_dims=True, preamble='', options=())``,
    with one output. Called ``k(x, y, ..., axis=None, keepdims=False)`` with the inputs
    (arrays, gpud.Buffers or scalars, which broadcast): axis=None reduces the whole
    arrays to a 0-d result; the last axis of 2-d arrays (axis=-1 or 1) gives one value
    per row. Other axes raise gpud.Unsupported. reduce_type is a dtype name (float32,
    float64, int32, int64) or None for the output's. gpud generates the CUDA C: one
    block per output value, a strided map then a tree in shared memory (block, a power
    of two, default 256).
    """

    _spec_class = ReductionSpec

    def __init__(self, in_params, out_params, map_expr, reduce_expr, post_map_expr, identity,
                 name="reduce_kernel", reduce_type=None, reduce_dims=True, preamble="",
                 options=(), *, block=0, fast_math=False, max_registers=0):
        if preamble:
            raise Unsupported("ReductionKernel: preamble is not supported by gpud's reduction "
                              "kernels (write the expressions in CUDA C)")
        if identity is None:
            raise Unsupported("ReductionKernel: gpud needs an identity (the value reduce_expr "
                              "starts from), got None")
        for what, v in (("map_expr", map_expr), ("reduce_expr", reduce_expr),
                        ("post_map_expr", post_map_expr), ("identity", identity)):
            if not isinstance(v, str) or not v.strip():
                raise InvalidArgument("ReductionKernel: %s must be a non-empty str of CUDA C, "
                                      "got %s" % (what, describe(v)))
        if reduce_type is not None:
            try:
                reduce_type = np.dtype(reduce_type).name
            except TypeError:
                raise Unsupported("ReductionKernel: reduce_type %r: gpud takes float32, "
                                  "float64, int32 or int64" % (reduce_type,)) from None
            if reduce_type not in _DTYPES:
                raise Unsupported("ReductionKernel: reduce_type %r: gpud takes float32, "
                                  "float64, int32 or int64" % (reduce_type,))
        self.in_names = _parse_ew(in_params, "in_params", "ReductionKernel")
        self.out_names = _parse_ew(out_params, "out_params", "ReductionKernel")
        if len(self.out_names) != 1:
            raise InvalidArgument("ReductionKernel: out_params: a reduction has exactly one "
                                  "output, got %d (%s)" % (len(self.out_names), out_params))
        fast, maxreg = _flag_options(options, "ReductionKernel")
        super().__init__(name, {
            "in_params": in_params, "out_params": out_params, "map_expr": map_expr,
            "reduce_expr": reduce_expr, "post_map_expr": post_map_expr, "identity": identity,
            "reduce_type": reduce_type or "", "block": int(block),
            "fast_math": int(bool(fast_math) or fast),
            "max_registers": int(max_registers or maxreg)})

    def _axis(self, args, axis):
        """(pass _axis, result ndim before keepdims, the arrays' ndim) for axis."""
        ndim = None
        for a in args:
            if isinstance(a, (np.ndarray, Buffer)):
                ndim = len(a.shape)
                break
        if axis is None:
            return False, ndim
        if isinstance(axis, tuple) and ndim is not None and \
                sorted(d % ndim if ndim else d for d in axis) == list(range(ndim)):
            return False, ndim  # every axis: the whole arrays
        if isinstance(axis, bool) or not isinstance(axis, (int, np.integer)) or ndim is None:
            raise Unsupported("%s: axis=%r: gpud reduces the whole arrays (axis=None) or the "
                              "last axis of 2-d arrays (axis=-1)" % (self.name, axis))
        ax = int(axis) + ndim if axis < 0 else int(axis)
        if ndim == 1 and ax == 0:
            return False, ndim
        if ndim == 2 and ax == 1:
            return True, ndim
        raise Unsupported("%s: axis=%r of a %d-d array: gpud reduces the whole arrays "
                          "(axis=None) or the last axis of 2-d arrays (axis=-1)"
                          % (self.name, axis, ndim))

    def __call__(self, *args: Any, axis: Any = None, keepdims: bool = False,
                 client: Optional[Client] = None) -> Any:
        if len(args) != len(self.in_names):
            raise ArgumentTypeError("%s: takes %d inputs (%s), got %d arguments" % (
                self.name, len(self.in_names), ", ".join(self.in_names), len(args)))
        last, ndim = self._axis(args, axis)
        c, _ = self.kernel(client)
        kw = dict(zip(self.in_names, args))
        if last:
            kw["_axis"] = -1
        res = self._run(c, kw)
        if isinstance(res, dict):
            res = res[self.out_names[0]]
        if keepdims and ndim:
            res = res.reshape((res.shape[0], 1) if last else (1,) * ndim)
        return res

    def __repr__(self):
        return "<gpud.ReductionKernel %s (%s) -> %s>" % (
            self.name, ", ".join(self.in_names), self.out_names[0])
