#!/usr/bin/python3
"""tests/ffi_check.py PREPROCESSED_H LIBGPUD_CLIENT_SO VERSION — the public
headers as FFI layers see them (make test-headers).

PREPROCESSED_H is gpud/client.h (which includes every public header) run
through the C preprocessor. It must parse with pycparser and with cffi's
FFI().cdef(), every function it declares must be exported by the shared
library, and a few functions are called through cffi's ABI mode (dlopen)
and ctypes, checking the values they return. Exits 1 naming each failure.
Debian's python3-cffi (with python3-pycparser) provides both parsers.
"""
import ctypes
import sys

import cffi
import pycparser
from pycparser import c_ast

failures = []


def check(cond, what):
    if not cond:
        failures.append(what)


def declared_functions(text):
    """Names of the functions the headers declare (not typedefs)."""
    ast = pycparser.c_parser.CParser().parse(text, "gpud/client.h")
    names = []
    for node in ast.ext:
        if isinstance(node, c_ast.FuncDef):
            failures.append("%s is defined in a header: FFI layers cannot call it"
                            % node.decl.name)
        elif isinstance(node, c_ast.Decl) and isinstance(node.type, c_ast.FuncDecl):
            names.append(node.name)
    return names


def main():
    if len(sys.argv) != 4:
        sys.exit("usage: ffi_check.py PREPROCESSED_H LIBGPUD_CLIENT_SO VERSION")
    header, libpath, version = sys.argv[1:]
    with open(header) as f:
        text = f.read()

    try:
        funcs = declared_functions(text)
    except pycparser.c_parser.ParseError as e:
        sys.exit("ffi_check: pycparser cannot parse the public headers: %s" % e)
    ffi = cffi.FFI()
    try:
        ffi.cdef(text)
    except cffi.CDefError as e:
        sys.exit("ffi_check: cffi cannot parse the public headers: %s" % e)
    check(len(funcs) >= 40, "only %d functions declared" % len(funcs))

    # Every declared function is a symbol of the shared library.
    so = ctypes.CDLL(libpath)
    missing = [f for f in funcs if not hasattr(so, f)]
    check(not missing, "declared in include/gpud/ but not exported by %s: %s"
          % (libpath, ", ".join(missing)))

    # cffi's ABI mode: constants, strings, arrays in and out.
    lib = ffi.dlopen(libpath)
    got = ffi.string(lib.gpud_version()).decode()
    check(got == version, "gpud_version() is %r, not %r" % (got, version))
    major, minor, patch = (int(p) for p in version.split("."))
    check(lib.gpud_version_number() == major * 10000 + minor * 100 + patch,
          "gpud_version_number() is %d" % lib.gpud_version_number())
    check(ffi.string(lib.gpud_dtype_name(lib.GPUD_F32)) == b"float32",
          "gpud_dtype_name(GPUD_F32)")
    check(lib.gpud_dtype_size(lib.GPUD_I64) == 8, "gpud_dtype_size(GPUD_I64)")
    shape = ffi.new("uint64_t[]", [2, 3])
    check(lib.gpud_shape_bytes(shape, 2, 8) == 48, "gpud_shape_bytes((2, 3), 8)")
    buf = ffi.new("char[]", 32)
    lib.gpud_shape_format(buf, 32, shape, 2)
    check(ffi.string(buf) == b"(2, 3)", "gpud_shape_format: %r" % ffi.string(buf))
    check(ffi.string(lib.gpud_strerror(lib.GPUD_EINVAL)) != b"", "gpud_strerror")
    check(ffi.sizeof("gpud_arg") == ctypes.sizeof(ctypes.c_void_p) * 2 + 8,
          "sizeof(gpud_arg) is %d" % ffi.sizeof("gpud_arg"))

    # The gpud_arg constructors return a struct holding a union, which
    # cffi's ABI mode refuses by design; ctypes calls them.
    class V(ctypes.Union):
        _fields_ = [("buffer", ctypes.c_uint64), ("f64", ctypes.c_double),
                    ("i64", ctypes.c_int64), ("b", ctypes.c_int),
                    ("array", ctypes.c_void_p), ("text", ctypes.c_char_p)]

    class Arg(ctypes.Structure):
        _fields_ = [("name", ctypes.c_char_p), ("kind", ctypes.c_int), ("v", V)]

    def ctor(name, argtype):
        fn = getattr(so, name)
        fn.restype = Arg
        fn.argtypes = [ctypes.c_char_p, argtype]
        return fn

    a = ctor("gpud_arg_f64", ctypes.c_double)(b"a", 2.5)
    check((a.name, a.kind, a.v.f64) == (b"a", lib.GPUD_ARG_F64, 2.5), "gpud_arg_f64")
    a = ctor("gpud_arg_i64", ctypes.c_int64)(b"n", -7)
    check((a.name, a.kind, a.v.i64) == (b"n", lib.GPUD_ARG_I64, -7), "gpud_arg_i64")
    a = ctor("gpud_arg_buffer", ctypes.c_uint64)(b"x", 0x123456789ABCDEF0)
    check((a.kind, a.v.buffer) == (lib.GPUD_ARG_BUFFER, 0x123456789ABCDEF0), "gpud_arg_buffer")
    a = ctor("gpud_arg_bool", ctypes.c_int)(b"normalize", 5)
    check((a.kind, a.v.b) == (lib.GPUD_ARG_BOOL, 1), "gpud_arg_bool")
    a = ctor("gpud_arg_dtype", ctypes.c_int)(b"dtype", lib.GPUD_F64)
    check((a.kind, a.v.text) == (lib.GPUD_ARG_TEXT, b"float64"), "gpud_arg_dtype")

    for f in failures:
        print("ffi_check: " + f, file=sys.stderr)
    if failures:
        sys.exit(1)
    print("ffi_check: %d functions declared, all exported; cffi and pycparser parse the "
          "headers; calls through cffi and ctypes return the expected values" % len(funcs))


if __name__ == "__main__":
    main()
