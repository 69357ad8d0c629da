"""gpud._dtypes — gpud's four element types and how numpy values map onto them.

gpud takes float32, float64, int32, int64, complex64 and complex128
(gpud_dtype in include/gpud/types.h, the same numbers on the wire); each
kernel says which of them it takes. An array of one of them
in the machine's byte order passes as it is; a non-contiguous one is copied
to C order and a byte-swapped one converted, both losslessly. Any other
dtype is refused with ArgumentTypeError: gpud never narrows or reinterprets
data silently.
"""
import numpy as np

from ._errors import ArgumentTypeError, InvalidArgument

F32, F64, I32, I64, C64, C128 = 1, 2, 3, 4, 5, 6
CODES = (F32, F64, I32, I64, C64, C128)
NAMES = {F32: "float32", F64: "float64", I32: "int32", I64: "int64", C64: "complex64",
         C128: "complex128"}
ALL = "float32, float64, int32, int64, complex64 or complex128"
NUMPY = {code: np.dtype(name) for code, name in NAMES.items()}
_BY_KIND = {("f", 4): F32, ("f", 8): F64, ("i", 4): I32, ("i", 8): I64, ("c", 8): C64,
            ("c", 16): C128}
MAX_DIMS = 8
INT64_MIN, INT64_MAX = -(1 << 63), (1 << 63) - 1


def code_of(dt):
    """gpud's code for a numpy dtype (any byte order), 0 if gpud does not take it."""
    return _BY_KIND.get((dt.kind, dt.itemsize), 0)


def names_of(mask):
    """'float32 or float64' for a bit mask of accepted dtypes."""
    names = [NAMES[c] for c in CODES if mask & (1 << c)]
    if not names:
        return ALL
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " or " + names[-1]


def describe(v):
    """How an argument value is named in messages: 'a float64 array of shape (3,)', 'None'."""
    if isinstance(v, np.ndarray):
        return "a %s array of shape %s" % (v.dtype, v.shape)
    if v is None:
        return "None"
    r = repr(v)
    if len(r) > 40:
        r = r[:37] + "..."
    return "%s %s" % (type(v).__name__, r)


def as_dtype_name(v, what):
    """'float32' for np.float32, 'float32', np.dtype('f4'), float (float64); else TypeError."""
    try:
        dt = np.dtype(v)
    except TypeError:
        raise ArgumentTypeError("%s: expected a dtype (%s), got %s" % (what, ALL, describe(v)))
    code = code_of(dt)
    if not code:
        raise ArgumentTypeError("%s: expected a dtype gpud has (%s), got %s" % (what, ALL, dt))
    return NAMES[code]


def as_array(v, what, mask=0):
    """v as a C-contiguous, native-order numpy array of a gpud dtype.

    mask: the parameter's accepted dtypes (bit 1 << code), 0 if not known.
    An ndarray keeps its dtype (byte order and layout aside); a list,
    tuple or other array-like becomes numpy's natural array, or, where the
    parameter takes one dtype only and the values convert exactly, that.
    """
    given = isinstance(v, np.ndarray)
    if not given:
        try:
            a = np.asarray(v)
        except (ValueError, TypeError) as e:
            raise ArgumentTypeError("%s: expected an array, got %s (%s)" % (what, describe(v), e))
    else:
        a = v
    dt = a.dtype
    code = code_of(dt)
    if not given and (not code or (mask and not mask & (1 << code))):
        only = [c for c in CODES if mask == (1 << c)]
        if only and dt.kind in "biufc":
            conv = a.astype(NUMPY[only[0]])
            with np.errstate(invalid="ignore"):
                exact = np.array_equal(conv.astype(dt), a, equal_nan=dt.kind == "f")
            if exact:
                a, dt, code = conv, conv.dtype, only[0]
    if not code or dt.kind not in "fic":
        raise ArgumentTypeError("%s: expected %s, got %s" % (
            what, ("an array of " + names_of(mask)), "an array of dtype %s" % dt
            if dt != object else "an array of Python objects (dtype object)"))
    if mask and not mask & (1 << code):
        raise ArgumentTypeError("%s: expected an array of %s, got %s" % (
            what, names_of(mask), "an array of dtype %s" % dt))
    if a.ndim > MAX_DIMS:
        raise InvalidArgument("%s: gpud takes arrays of up to %d dimensions, got %d"
                              % (what, MAX_DIMS, a.ndim))
    if not dt.isnative:
        a = a.astype(dt.newbyteorder("="))
    if not a.flags.c_contiguous:
        a = np.ascontiguousarray(a)
    return a, code
