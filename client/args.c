/*
 * client/args.c — the gpud_arg constructors of gpud/client.h: one gpud_arg
 * by name and kind. Plain exported functions rather than inline ones, so
 * FFI layers (ctypes, cffi) can call them like the rest of the API. No
 * state: any thread may call them.
 */
#include <gpud/client.h>

static gpud_arg arg(const char *name, gpud_arg_kind kind)
{
	gpud_arg a = {0};
	a.name = name;
	a.kind = kind;
	return a;
}

gpud_arg gpud_arg_buffer(const char *name, gpud_handle h)
{
	gpud_arg a = arg(name, GPUD_ARG_BUFFER);
	a.v.buffer = h;
	return a;
}

gpud_arg gpud_arg_array(const char *name, const gpud_array *array)
{
	gpud_arg a = arg(name, GPUD_ARG_ARRAY);
	a.v.array = array;
	return a;
}

gpud_arg gpud_arg_f64(const char *name, double v)
{
	gpud_arg a = arg(name, GPUD_ARG_F64);
	a.v.f64 = v;
	return a;
}

gpud_arg gpud_arg_i64(const char *name, int64_t v)
{
	gpud_arg a = arg(name, GPUD_ARG_I64);
	a.v.i64 = v;
	return a;
}

gpud_arg gpud_arg_bool(const char *name, int v)
{
	gpud_arg a = arg(name, GPUD_ARG_BOOL);
	a.v.b = v != 0;
	return a;
}

gpud_arg gpud_arg_text(const char *name, const char *text)
{
	gpud_arg a = arg(name, GPUD_ARG_TEXT);
	a.v.text = text;
	return a;
}

gpud_arg gpud_arg_dtype(const char *name, gpud_dtype t)
{
	return gpud_arg_text(name, gpud_dtype_name(t));
}
