/*
 * client/gpuctl/values.c — reading values from the command line: run's
 * ARG=VALUE forms (@FILE, - for stdin, %HANDLE, true/false, integers,
 * numbers, words), integers (decimal, 0x hex; 010 is ten), handles, counts
 * and seconds for options, and -o [NAME=]FILE specs. Anything malformed is a
 * usage error that names the argument, what was expected and what was given.
 *
 * Where a value could be read two ways, the rule is fixed: a value that
 * reads as a scalar is the scalar, even if a file of that name exists (gpuctl
 * then says on stderr how to name the file: @NAME); files are @FILE, or the
 * old forms that cannot be scalars (a name ending in .npy, a path with '/').
 */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "client/gpuctl/gpuctl.h"

static int is_hex_digits(const char *s, size_t min, size_t max)
{
	size_t n = strlen(s);
	if (n < min || n > max)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!isxdigit((unsigned char)s[i]))
			return 0;
	return 1;
}

static int exists(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 && !S_ISDIR(st.st_mode);
}

static int ends_with_npy(const char *s)
{
	size_t n = strlen(s);
	return n > 4 && strcasecmp(s + n - 4, ".npy") == 0;
}

int parse_int64(const char *s, int64_t *out, const char **why)
{
	const char *p = s;
	int neg = 0, base = 10;
	uint64_t v = 0, limit;

	if (*p == '+' || *p == '-')
		neg = *p++ == '-';
	if (p[0] == '0' && (p[1] == 'x' || p[1] == 'X')) {
		base = 16;
		p += 2;
	}
	if (*p == '\0') {
		*why = base == 16 ? "no hex digits after 0x" : "not an integer";
		return -1;
	}
	limit = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
	for (; *p; p++) {
		int d;
		if (*p >= '0' && *p <= '9')
			d = *p - '0';
		else if (base == 16 && isxdigit((unsigned char)*p))
			d = tolower((unsigned char)*p) - 'a' + 10;
		else {
			*why = "not an integer";
			return -1;
		}
		if (v > (limit - (uint64_t)d) / (uint64_t)base) {
			*why = "out of range";
			return -1;
		}
		v = v * (uint64_t)base + (uint64_t)d;
	}
	*out = neg ? (int64_t)(0 - v) : (int64_t)v;
	return 0;
}

/* Starts like a number: a digit, or '.' and a digit, after an optional sign. */
static int numeric_start(const char *s)
{
	if (*s == '+' || *s == '-')
		s++;
	return isdigit((unsigned char)s[0]) || (s[0] == '.' && isdigit((unsigned char)s[1]));
}

static int is_inf_nan(const char *s)
{
	if (*s == '+' || *s == '-')
		s++;
	return !strcasecmp(s, "inf") || !strcasecmp(s, "infinity") || !strcasecmp(s, "nan");
}

/* A number (integer, then decimal), or a usage error. Returns 1 for an integer. */
static int parse_number(const char *cmd, const char *name, const char *text, int64_t *i, double *f)
{
	const char *why;
	char *end;

	if (parse_int64(text, i, &why) == 0)
		return 1;
	if (!strcmp(why, "out of range"))
		die_usage(cmd,
			  "argument '%s': expected an integer from -9223372036854775808 to "
			  "9223372036854775807 (int64), got %s",
			  name, text);
	errno = 0;
	*f = strtod(text, &end);
	if (end == text || *end != '\0')
		die_usage(cmd,
			  "argument '%s': expected a number (a decimal integer such as 42, 0x "
			  "and hex digits, or a decimal such as 0.5 or 1e-3), got '%s'",
			  name, text);
	if (errno == ERANGE && isinf(*f))
		die_usage(cmd,
			  "argument '%s': expected a float64 from -1.8e308 to 1.8e308 (or inf), "
			  "got %s, which is out of range",
			  name, text);
	return 0;
}

/* A handle after '%' (or the old '@'): 1 to 16 hex digits, not zero. */
static gpud_handle hex_handle(const char *cmd, const char *what, const char *digits,
			      const char *text)
{
	if (!is_hex_digits(digits, 1, 16))
		die_usage(cmd,
			  "%s: expected %%HANDLE (1 to 16 hex digits, as 'gpuctl upload' "
			  "printed), got '%s'",
			  what, text);
	gpud_handle h = (gpud_handle)strtoull(digits, NULL, 16);
	if (h == 0)
		die_usage(cmd, "%s: expected a handle, got '%s': 0 names no buffer", what, text);
	return h;
}

void parse_value(const char *cmd, const char *name, const char *text, ctl_value *v)
{
	char what[GPUD_NAME_MAX + 16];

	memset(v, 0, sizeof(*v));
	snprintf(what, sizeof(what), "argument '%s'", name);
	if (text[0] == '\0')
		die_usage(cmd, "%s has an empty value: expected @FILE.npy, -, %%HANDLE or a scalar",
			  what);
	if (!strcmp(text, "-") || !strcmp(text, "@-")) {
		v->kind = VAL_STDIN;
		return;
	}
	if (text[0] == '@') {
		const char *rest = text + 1;
		if (rest[0] == '\0')
			die_usage(cmd, "%s: expected a file name after '@', got '%s'", what, text);
		/* gpuctl 0.1 wrote handles as @HANDLE: read so while no such file exists. */
		if (is_hex_digits(rest, 16, 16) && !exists(rest)) {
			v->kind = VAL_HANDLE;
			v->handle = hex_handle(cmd, what, rest, text);
			return;
		}
		v->kind = VAL_FILE;
		v->path = rest;
		return;
	}
	if (text[0] == '%') {
		v->kind = VAL_HANDLE;
		v->handle = hex_handle(cmd, what, text + 1, text);
		return;
	}
	/* The forms that cannot be scalars: paths and .npy names are files. */
	if (strchr(text, '/') || ends_with_npy(text)) {
		v->kind = VAL_FILE;
		v->path = text;
		return;
	}
	const char *said;
	char shown[64];
	if (!strcasecmp(text, "true") || !strcasecmp(text, "false")) {
		v->kind = VAL_BOOL;
		v->b = !strcasecmp(text, "true");
		said = v->b ? "the boolean true" : "the boolean false";
	} else if (numeric_start(text)) {
		if (parse_number(cmd, name, text, &v->i, &v->f)) {
			v->kind = VAL_INT;
			snprintf(shown, sizeof(shown), "the integer %lld", (long long)v->i);
		} else {
			v->kind = VAL_FLOAT;
			snprintf(shown, sizeof(shown), "the number %.17g", v->f);
		}
		said = shown;
	} else if (is_inf_nan(text)) {
		v->kind = VAL_FLOAT;
		v->f = strtod(text, NULL);
		said = "a number";
	} else {
		v->kind = VAL_TEXT;
		v->text = text;
		said = "a word (gpud reads it as the argument's type: a dtype name)";
	}
	if (exists(text))
		note("%s=%s is %s; a file named '%s' is here too: write %s=@%s for the file", name,
		     text, said, text, name, text);
}

gpud_handle parse_handle_arg(const char *cmd, const char *text)
{
	const char *p = text;
	if (*p == '%' || *p == '@')
		p++;
	if (p[0] == '0' && (p[1] == 'x' || p[1] == 'X'))
		p += 2;
	if (!is_hex_digits(p, 1, 16))
		die_usage(cmd,
			  "'%s' is not a handle: expected 1 to 16 hex digits (as 'gpuctl upload' "
			  "printed), optionally after %%",
			  text);
	gpud_handle h = (gpud_handle)strtoull(p, NULL, 16);
	if (h == 0)
		die_usage(cmd, "'%s' is not a handle: 0 names no buffer", text);
	return h;
}

long parse_count(const char *cmd, const char *option, const char *text, long min, long max)
{
	int64_t v;
	const char *why;
	if (parse_int64(text, &v, &why) != 0 || v < min || v > max)
		die_usage(cmd, "%s: expected an integer from %ld to %ld, got '%s'", option, min,
			  max, text);
	return (long)v;
}

double parse_seconds(const char *cmd, const char *option, const char *text, double min, double max)
{
	char *end;
	errno = 0;
	double v = strtod(text, &end);
	if (end == text || *end != '\0' || errno || !(v >= min && v <= max))
		die_usage(cmd, "%s: expected seconds from %g to %g, got '%s'", option, min, max,
			  text);
	return v;
}

static const char *const global_options[] = {"--url",   "--token", "--timeout", "-q",
					     "--quiet", "-v",      "--verbose", NULL};

void die_unknown_option(const char *cmd, const char *a)
{
	for (int i = 0; global_options[i]; i++) {
		size_t n = strlen(global_options[i]);
		if (!strncmp(a, global_options[i], n) && (a[n] == '\0' || a[n] == '='))
			die_usage(cmd,
				  "%s is an option of gpuctl itself: put it before the command "
				  "(gpuctl %s ... %s ...)",
				  global_options[i], global_options[i], cmd);
	}
	die_usage(cmd, "unknown option '%s'", a);
}

static int is_name(const char *s, size_t n)
{
	if (n == 0 || n >= GPUD_NAME_MAX || !(isalpha((unsigned char)s[0]) || s[0] == '_'))
		return 0;
	for (size_t i = 1; i < n; i++)
		if (!(isalnum((unsigned char)s[i]) || s[i] == '_'))
			return 0;
	return 1;
}

void parse_out_spec(const char *cmd, const char *text, out_spec *o)
{
	const char *eq = strchr(text, '=');

	memset(o, 0, sizeof(*o));
	o->arg = text;
	o->path = text;
	if (eq && is_name(text, (size_t)(eq - text))) {
		o->named = 1;
		snprintf(o->name, sizeof(o->name), "%.*s", (int)(eq - text), text);
		o->path = eq + 1;
	}
	if (o->path[0] == '@')
		o->path++;
	if (o->path[0] == '\0')
		die_usage(cmd, "-o %s: expected a file name (or - for stdout)%s", text,
			  o->named ? " after '='" : "");
	o->to_stdout = !strcmp(o->path, "-");
}

int take_out_option(const char *cmd, int argc, char **argv, int *i, out_spec *o)
{
	const char *a = argv[*i];
	if (!strcmp(a, "-o") || !strcmp(a, "--output")) {
		if (*i + 1 >= argc)
			die_usage(cmd, "%s needs a value: FILE.npy, NAME=FILE.npy or - for stdout",
				  a);
		parse_out_spec(cmd, argv[++*i], o);
		return 1;
	}
	if (!strncmp(a, "--output=", 9)) {
		parse_out_spec(cmd, a + 9, o);
		return 1;
	}
	if (!strncmp(a, "-o", 2) && a[2]) {
		parse_out_spec(cmd, a + 2, o);
		return 1;
	}
	return 0;
}
