"""gpud._kernels — what gpud says about its kernels, as Python objects, and client.k.

Kernel and Param describe a kernel as gpud lists it (gpud_kernels: names,
roles, accepted dtypes, ranks, defaults and the daemon's own docs). A
Client's ``k`` attribute turns each into a function with a real signature
and a docstring built from that description, so help(client.k.lombscargle)
and tab completion work; calling one is client.run with those arguments.
"""
import ctypes
import re

from . import _dtypes
from ._lib import PARAM_IN, PARAM_OUT, KernelList, KernelRegistration, lib

ROLE_NAMES = {PARAM_IN: "in", PARAM_OUT: "out", 2: "scalar"}


def _text(b):
    return b.decode("utf-8", "replace") if b else ""


def _parse_default(s):
    """A daemon default ("false", "10", "0.5", "float64") as a Python value."""
    if s in ("true", "false"):
        return s == "true"
    for conv in (int, float):
        try:
            return conv(s)
        except ValueError:
            pass
    return s


class Param:
    """One parameter of a kernel: name, role ('in', 'out' or 'scalar'), dtypes, rank, default;
    an output's ``inplace_of``: the inputs it may be given the very buffer of (in place)."""

    __slots__ = ("name", "role", "mask", "dtypes", "ndim", "optional", "default", "type", "doc",
                 "inplace_of")

    def __init__(self, p):
        self.name = _text(p.name)
        self.role = ROLE_NAMES.get(p.role, "scalar")
        self.mask = p.dtypes
        self.dtypes = tuple(_dtypes.NAMES[c] for c in sorted(_dtypes.NAMES) if p.dtypes & (1 << c))
        self.ndim = p.ndim
        self.optional = bool(p.optional)
        d = _text(p.default_value)
        self.default = _parse_default(d) if d else None
        self.type = _text(p.type)
        self.doc = _text(p.doc)
        self.inplace_of = tuple(n for n in _text(p.inplace_of).split("|") if n)

    def __repr__(self):
        return "Param(%r, %s, %s%s)" % (self.name, self.role, self.type,
                                       ", default=%r" % self.default if self.optional else "")


class Kernel:
    """A kernel of gpud: ``name``, ``doc``, ``params`` (a tuple of Param), and ``signature``.

    Custom kernels (``custom`` True) also say whether they are ``shared``,
    ``pinned`` (never evicted at the custom_kernels quota), and ``last_used``
    (Unix seconds of their last run or registration, as of the listing).
    """

    __slots__ = ("name", "doc", "params", "by_name", "outputs", "custom", "shared", "pinned",
                 "last_used", "__dict__")

    def __init__(self, k, reg=None):
        self.name = _text(k.name)
        self.doc = _text(k.doc)
        self.custom = bool(reg.custom) if reg is not None else False
        self.shared = bool(reg.shared) if reg is not None else False
        self.pinned = bool(reg.pinned) if reg is not None else False
        self.last_used = float(reg.last_used) if reg is not None and reg.custom else None
        self.params = tuple(Param(k.params[i]) for i in range(k.nparams))
        self.by_name = {p.name: p for p in self.params}
        self.outputs = tuple(p.name for p in self.params if p.role == "out")

    @property
    def signature(self):
        """An inspect.Signature: inputs and scalars by position or name, outputs by name only."""
        sig = self.__dict__.get("_sig")
        if sig is None:
            import inspect
            P = inspect.Parameter
            ps = []
            for p in self.params:
                if p.role == "out":
                    continue
                default = (p.default if p.default is not None else None) if p.optional \
                    else P.empty
                ps.append(P(p.name, P.POSITIONAL_OR_KEYWORD, default=default))
            # Parameters without a default may not follow one: those become keyword-only.
            fixed, seen_default = [], False
            for q in ps:
                if q.default is not P.empty:
                    seen_default = True
                elif seen_default:
                    q = q.replace(kind=P.KEYWORD_ONLY)
                fixed.append(q)
            ordered = [q for q in fixed if q.kind != P.KEYWORD_ONLY]
            ordered += [q for q in fixed if q.kind == P.KEYWORD_ONLY]
            ordered += [P(o, P.KEYWORD_ONLY, default=None) for o in self.outputs]
            sig = inspect.Signature(ordered)
            self.__dict__["_sig"] = sig
        return sig

    def docstring(self):
        lines = ["%s%s" % (self.name, self.signature), ""]
        if self.doc:
            lines += [self.doc, ""]
        ins = [p for p in self.params if p.role != "out"]
        if ins:
            lines += ["Parameters", "----------"]
            for p in ins:
                t = p.type or p.role
                # gpud's type text already says "(optional)" or "(default ...)": numpy
                # style's ", optional" / ", default X" then, instead of saying it twice
                t = re.sub(r" \((optional|default [^)]*)\)$", "", t)
                if p.optional:
                    t += ", default %r" % (p.default,) if p.default is not None else ", optional"
                lines.append("%s : %s" % (p.name, t))
                if p.doc:
                    lines.append("    " + p.doc)
            lines.append("")
        outs = [p for p in self.params if p.role == "out"]
        if outs:
            lines += ["Returns", "-------"]
            for p in outs:
                lines.append("%s : %s" % (p.name, p.type or "array"))
                if p.doc:
                    lines.append("    " + p.doc)
                if p.inplace_of:
                    lines.append("    may be written in place of " + " or ".join(p.inplace_of)
                                 + " (the same buffer)")
            if len(outs) > 1:
                lines.append("(a dict of numpy arrays by these names)")
            lines.append("")
            lines.append("Pass an output as a gpud.Buffer (by its name, or out=) to have it "
                         "written in gpud.")
        return "\n".join(lines)

    def __repr__(self):
        return "<gpud kernel %s%s>" % (self.name, self.signature)


def fetch(c):
    """Every kernel gpud lists for this client, as {name: Kernel}; (status, None) on failure."""
    lp = ctypes.POINTER(KernelList)()
    st = lib.gpud_kernels(c, ctypes.byref(lp))
    if st != 0:
        return st, None
    try:
        l = lp.contents
        out = {}
        for i in range(l.count):
            reg = KernelRegistration()
            if lib.gpud_kernel_registration_get(lp, i, ctypes.byref(reg)) != 0:
                reg = None
            k = Kernel(l.kernels[i], reg)
            out[k.name] = k
        return 0, out
    finally:
        lib.gpud_kernel_list_free(lp)



class KernelFunction:
    """client.k.NAME: calls client.run(NAME, ...) with the kernel's own signature."""

    def __init__(self, client, kernel):
        self._client = client
        self._kernel = kernel
        self.__name__ = kernel.name
        self.__qualname__ = "k." + kernel.name
        self.__doc__ = kernel.docstring()
        self.__signature__ = kernel.signature

    def __call__(self, *args, **kwargs):
        bound = self.__signature__.bind(*args, **kwargs)
        return self._client.run(self._kernel.name, **bound.arguments)

    def __repr__(self):
        return "<gpud kernel function %s%s>" % (self._kernel.name, self.__signature__)


class KernelNamespace:
    """client.k: every kernel of gpud as an attribute (built-in, shared and the tenant's own)."""

    def __init__(self, client):
        self._client = client
        self._fns = {}

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        k = self._client._kernel(name)
        if k is None:
            raise AttributeError("gpud has no kernel %r (client.kernels lists them)" % name)
        f = self._fns.get(name)
        if f is None or f._kernel is not k:
            f = self._fns[name] = KernelFunction(self._client, k)
        return f

    def __dir__(self):
        return sorted(self._client._kernel_table())

    def __repr__(self):
        return "<gpud kernels: %s>" % ", ".join(self.__dir__())
