"""gpud._lib — libgpud-client through ctypes: finding the library, its structs and functions.

The C library is the only part that speaks gpud's protocol; this module only
declares what include/gpud/client.h, npy.h and types.h declare, with the same
layouts. ctypes releases the GIL for the length of every call into it.

Where the library is looked for, in order (the first that loads is used):
  1. $GPUD_LIB, a path to libgpud-client.so.0 (only that, when set): the
     user's explicit choice wins over everything, a wheel's library too;
  2. the package's own gpud/_libs/libgpud-client.so.0, as a wheel built by
     `make wheel` carries it (only that, when it is there: if it does not
     load, the import fails and says why, rather than taking another
     library of perhaps another version);
  3. the library directory `make install` recorded in gpud/_install.py;
  4. build/ of the source tree this package sits in (python/../build);
  5. libgpud-client.so.0 through the dynamic loader (ldconfig's paths,
     $LD_LIBRARY_PATH).
`path` is the library loaded and `source` which of these it came from
("GPUD_LIB", "wheel", "install", "tree" or "loader").
"""
import ctypes
import os

SONAME = "libgpud-client.so.0"
MAX_DIMS = 8
NAME_MAX = 64
MAX_DEVICES = 16
MAX_VARIANTS = 32
MAX_SESSIONS = 64

c_char_p = ctypes.c_char_p
c_int = ctypes.c_int
c_uint = ctypes.c_uint
c_size_t = ctypes.c_size_t
c_u64 = ctypes.c_uint64
c_i64 = ctypes.c_int64
c_double = ctypes.c_double
c_void_p = ctypes.c_void_p


class Array(ctypes.Structure):
    """gpud_array."""
    _fields_ = [("dtype", c_int), ("ndim", c_int), ("shape", c_u64 * MAX_DIMS),
                ("data", c_void_p), ("nbytes", c_size_t)]


class Options(ctypes.Structure):
    """gpud_options."""
    _fields_ = [("url", c_char_p), ("token", c_char_p), ("tls_ca", c_char_p),
                ("tls_server_name", c_char_p), ("timeout_ms", c_int),
                ("connect_timeout_ms", c_int)]


class DeviceInfo(ctypes.Structure):
    """gpud_device_info."""
    _fields_ = [("index", c_int), ("name", ctypes.c_char * 128), ("cc_major", c_int),
                ("cc_minor", c_int), ("memory_total", c_u64), ("memory_free", c_u64),
                ("sm_count", c_int), ("lost", c_int), ("lost_message", ctypes.c_char * 256),
                ("runs", c_uint), ("slots", c_uint), ("bytes_moving", c_u64),
                ("buffers", c_u64), ("bytes_in_use", c_u64), ("runs_total", c_u64),
                ("busy_s", c_double), ("has_pool", c_int), ("pool_in_use", c_u64),
                ("pool_cached", c_u64), ("pool_high_water", c_u64), ("pool_limit", c_u64)]


class ServerInfo(ctypes.Structure):
    """gpud_server_info."""
    _fields_ = [("version", ctypes.c_char * 32), ("protocol_version", c_uint),
                ("backend", ctypes.c_char * 16), ("max_message_size", c_u64),
                ("connection", c_uint), ("tenant", ctypes.c_char * 64), ("instance", c_u64),
                ("ndevices", c_int), ("devices", DeviceInfo * MAX_DEVICES)]


class ArgValue(ctypes.Union):
    _fields_ = [("buffer", c_u64), ("f64", c_double), ("i64", c_i64), ("b", c_int),
                ("array", ctypes.POINTER(Array)), ("text", c_char_p)]


class Arg(ctypes.Structure):
    """gpud_arg."""
    _fields_ = [("name", c_char_p), ("kind", c_int), ("v", ArgValue)]


ARG_BUFFER, ARG_F64, ARG_I64, ARG_BOOL, ARG_ARRAY, ARG_TEXT = range(6)


class Output(ctypes.Structure):
    """gpud_output."""
    _fields_ = [("name", ctypes.c_char * NAME_MAX), ("handle", c_u64), ("dtype", c_int),
                ("ndim", c_int), ("shape", c_u64 * MAX_DIMS), ("device", c_int)]


class RunInfo(ctypes.Structure):
    """gpud_run_info."""
    _fields_ = [("elapsed_us", c_double), ("kernel_us", c_double)]


class ParamInfo(ctypes.Structure):
    """gpud_param_info."""
    _fields_ = [("name", c_char_p), ("role", c_int), ("dtypes", c_uint), ("ndim", c_int),
                ("optional", c_int), ("default_value", c_char_p), ("type", c_char_p),
                ("doc", c_char_p), ("inplace_of", c_char_p)]


PARAM_IN, PARAM_OUT, PARAM_SCALAR = range(3)


class KernelInfo(ctypes.Structure):
    """gpud_kernel_info."""
    _fields_ = [("name", c_char_p), ("doc", c_char_p), ("nparams", c_size_t),
                ("params", ctypes.POINTER(ParamInfo))]


class KernelList(ctypes.Structure):
    """gpud_kernel_list."""
    _fields_ = [("count", c_size_t), ("kernels", ctypes.POINTER(KernelInfo))]


class Result(ctypes.Structure):
    """gpud_result."""
    _fields_ = [("name", ctypes.c_char * NAME_MAX), ("array", Array)]


class KernelSpec(ctypes.Structure):
    """gpud_kernel_spec."""
    _fields_ = [("name", c_char_p), ("elementwise", c_int), ("source", c_char_p),
                ("entry", c_char_p), ("signature", c_char_p), ("in_params", c_char_p),
                ("out_params", c_char_p), ("block", c_uint), ("blocks_per_sm", c_uint),
                ("fast_math", c_int), ("max_registers", c_uint), ("shared", c_int)]


KernelSpec.register_fn = "gpud_register_flags"


class ReductionSpec(ctypes.Structure):
    """gpud_reduction_spec."""
    _fields_ = [("name", c_char_p), ("in_params", c_char_p), ("out_params", c_char_p),
                ("map_expr", c_char_p), ("reduce_expr", c_char_p), ("post_map_expr", c_char_p),
                ("identity", c_char_p), ("reduce_type", c_char_p), ("block", c_uint),
                ("fast_math", c_int), ("max_registers", c_uint), ("shared", c_int)]
    register_fn = "gpud_register_reduction"


class KernelRegistration(ctypes.Structure):
    """gpud_kernel_registration."""
    _fields_ = [("custom", c_int), ("shared", c_int), ("pinned", c_int),
                ("last_used", ctypes.c_double)]


REGISTER_UNPINNED = 1  # GPUD_REGISTER_UNPINNED


class BufferInfo(ctypes.Structure):
    """gpud_buffer_info."""
    _fields_ = [("handle", c_u64), ("dtype", c_int), ("ndim", c_int),
                ("shape", c_u64 * MAX_DIMS), ("nbytes", c_size_t), ("kept", c_int),
                ("device", c_int), ("pinned", c_int)]


class VariantInfo(ctypes.Structure):
    """gpud_variant_info."""
    _fields_ = [("kernel", ctypes.c_char * NAME_MAX), ("variant", ctypes.c_char * 32),
                ("registers", c_int), ("block", c_int), ("max_threads", c_int),
                ("shared_bytes", c_u64), ("local_bytes", c_u64)]


class SessionInfo(ctypes.Structure):
    """gpud_session_info."""
    _fields_ = [("id", c_uint), ("peer", ctypes.c_char * 64), ("buffers", c_u64),
                ("bytes", c_u64), ("requests", c_u64), ("in_flight", c_uint),
                ("regions", c_u64), ("region_bytes", c_u64), ("tenant", ctypes.c_char * 64)]


class DaemonStatus(ctypes.Structure):
    """gpud_daemon_status."""
    _fields_ = [("server", ServerInfo), ("nvariants", c_int),
                ("variants", VariantInfo * MAX_VARIANTS), ("uptime_s", c_double),
                ("requests", c_u64), ("errors", c_u64), ("cancelled", c_u64),
                ("cancelled_closed", c_u64), ("connections", c_uint),
                ("in_flight", c_uint), ("buffers", c_u64), ("bytes_in_use", c_u64),
                ("bytes_high_water", c_u64), ("has_pool", c_int), ("pool_in_use", c_u64),
                ("pool_cached", c_u64), ("pool_high_water", c_u64), ("pool_limit", c_u64),
                ("pool_allocs", c_u64), ("pool_hits", c_u64), ("has_staging", c_int),
                ("staging_buffers", c_uint), ("staging_free", c_uint),
                ("staging_chunk", c_u64), ("bytes_staged", c_u64), ("has_lending", c_int),
                ("lend_spare_bytes", c_u64), ("lend_kept_bytes", c_u64),
                ("lend_lent_bytes", c_u64), ("lend_from_kept", c_u64),
                ("lend_from_spare", c_u64), ("lend_made", c_u64),
                ("has_host_memory", c_int), ("host_used", c_u64), ("host_limit", c_u64),
                ("host_high_water", c_u64), ("host_refused", c_u64),
                ("host_buffers", c_u64), ("host_lent", c_u64), ("host_pinned", c_u64),
                ("host_staging", c_u64), ("host_messages", c_u64), ("host_rings", c_u64),
                ("degraded", c_int),
                ("nsessions", c_int),
                ("nsessions_total", c_uint), ("sessions", SessionInfo * MAX_SESSIONS),
                ("scope", c_int), ("tenant", ctypes.c_char * 64)]


P = ctypes.POINTER
# gpud_job_fn: void (*)(gpud_job *job, void *arg), called on a thread of the library's
JobFn = ctypes.CFUNCTYPE(None, c_void_p, c_void_p)
# name: (restype, argtypes)
_FUNCS = {
    "gpud_version": (c_char_p, []),
    "gpud_version_number": (c_int, []),
    "gpud_connect_opts": (c_int, [P(Options), P(c_void_p)]),
    "gpud_close": (None, [c_void_p]),
    "gpud_set_timeout": (None, [c_void_p, c_int]),
    "gpud_reconnects": (c_uint, [c_void_p]),
    "gpud_server": (P(ServerInfo), [c_void_p]),
    "gpud_url": (c_char_p, [c_void_p]),
    "gpud_errmsg": (c_char_p, [c_void_p]),
    "gpud_strerror": (c_char_p, [c_int]),
    "gpud_alloc": (c_int, [c_void_p, c_int, c_int, P(c_u64), c_void_p, P(c_u64)]),
    "gpud_upload": (c_int, [c_void_p, c_u64, c_u64, c_void_p, c_size_t]),
    "gpud_download_range": (c_int, [c_void_p, c_u64, c_u64, c_void_p, c_size_t]),
    "gpud_sync": (c_int, [c_void_p]),
    "gpud_free": (c_int, [c_void_p, P(c_u64), c_size_t]),
    "gpud_set_keep": (None, [c_void_p, c_int]),
    "gpud_set_device": (None, [c_void_p, c_int]),
    "gpud_list": (c_int, [c_void_p, P(P(BufferInfo)), P(c_size_t)]),
    "gpud_host_alloc": (c_void_p, [c_void_p, c_size_t]),
    "gpud_host_free": (c_int, [c_void_p, c_void_p]),
    "gpud_has_shm": (c_int, [c_void_p]),
    "gpud_set_ring": (None, [c_void_p, c_int]),
    "gpud_ring_calls": (c_u64, [c_void_p]),
    "gpud_run": (c_int, [c_void_p, c_char_p, P(Arg), c_size_t, P(Output), c_size_t,
                         P(c_size_t), P(RunInfo)]),
    "gpud_call": (c_int, [c_void_p, c_char_p, P(Arg), c_size_t, P(Result), c_size_t,
                          P(c_size_t), P(RunInfo)]),
    "gpud_call_into": (c_int, [c_void_p, c_char_p, P(Arg), c_size_t, P(Array), c_size_t,
                               P(Result), c_size_t, P(c_size_t), P(c_size_t), P(RunInfo)]),
    "gpud_call_to": (c_int, [c_void_p, c_char_p, P(Arg), c_size_t, c_void_p, c_size_t,
                             P(Result), c_size_t, P(c_size_t), c_void_p, P(c_int)]),
    "gpud_register": (c_int, [c_void_p, P(KernelSpec)]),
    "gpud_register_flags": (c_int, [c_void_p, P(KernelSpec), c_uint]),
    "gpud_register_reduction": (c_int, [c_void_p, P(ReductionSpec), c_uint]),
    "gpud_unregister": (c_int, [c_void_p, c_char_p]),
    "gpud_kernels": (c_int, [c_void_p, P(P(KernelList))]),
    "gpud_kernel_list_free": (None, [P(KernelList)]),
    "gpud_kernel_registration_get": (c_int, [P(KernelList), c_size_t, P(KernelRegistration)]),
    "gpud_status_get": (c_int, [c_void_p, P(DaemonStatus)]),
    "gpud_array_free": (None, [P(Array)]),
    # asynchronous jobs (a gpud_job * is a c_void_p here)
    "gpud_run_async": (c_int, [c_void_p, c_char_p, P(Arg), c_size_t, JobFn, c_void_p,
                               P(c_void_p)]),
    "gpud_call_async": (c_int, [c_void_p, c_char_p, P(Arg), c_size_t, JobFn, c_void_p,
                                P(c_void_p)]),
    "gpud_job_wait": (c_int, [c_void_p, c_int]),
    "gpud_job_done": (c_int, [c_void_p]),
    "gpud_job_cancel": (c_int, [c_void_p]),
    "gpud_job_outputs": (c_int, [c_void_p, P(Output), c_size_t, P(c_size_t), P(RunInfo)]),
    "gpud_job_results": (c_int, [c_void_p, P(Result), c_size_t, P(c_size_t), P(RunInfo)]),
    "gpud_job_errmsg": (c_char_p, [c_void_p]),
    "gpud_job_free": (None, [c_void_p]),
}


def _candidates():
    """(path, source) pairs to try, in order; see the module's docstring."""
    env = os.environ.get("GPUD_LIB")
    if env:
        return [(env, "GPUD_LIB")]
    here = os.path.dirname(os.path.abspath(__file__))
    own = os.path.join(here, "_libs", SONAME)
    if os.path.exists(own):
        return [(own, "wheel")]
    out = []
    try:
        from gpud import _install  # written by make install
        out.append((os.path.join(_install.LIBDIR, SONAME), "install"))
    except ImportError:
        pass
    tree = os.path.join(here, os.pardir, os.pardir, "build", SONAME)
    if os.path.exists(tree):
        out.append((os.path.normpath(tree), "tree"))
    out.append((SONAME, "loader"))
    return out


def _load():
    tried = []
    for path, source in _candidates():
        try:
            lib = ctypes.CDLL(path)
        except OSError as e:
            if source == "wheel":
                raise ImportError(
                    "gpud: cannot load the package's own libgpud-client, %s: %s. A wheel's "
                    "library needs glibc 2.X or newer (the wheel's tag manylinux_2_X) and "
                    "the architecture the tag names; set GPUD_LIB to the path of another "
                    "%s to use that one instead" % (path, e, SONAME)) from None
            tried.append("%s: %s" % (path, e))
            continue
        for name, (res, args) in _FUNCS.items():
            try:
                f = getattr(lib, name)
            except AttributeError:
                raise ImportError("gpud: %s has no %s: it is older than this package; build "
                                  "and install libgpud-client of the same version" % (path, name))
            f.restype = res
            f.argtypes = args
        lib.gpud_free_libc = ctypes.CDLL(None).free
        return lib, path, source
    raise ImportError(
        "gpud: cannot load libgpud-client (%s). Build it ('make' in gpud's source tree), "
        "install it ('make install'), or set GPUD_LIB to the path of %s. Tried: %s"
        % (SONAME, SONAME, "; ".join(tried)))


lib, path, source = _load()
lib.gpud_free_libc.argtypes = [c_void_p]
lib.gpud_free_libc.restype = None
