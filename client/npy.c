/*
 * client/npy.c — NumPy .npy files: the preamble (magic, version, header
 * length), a small hand parser for the header's Python dict literal, loading
 * from a file, a file descriptor (a pipe) or a buffer, and saving in format
 * 1.0 (2.0 when needed) to a file or a file descriptor, or the header alone
 * for writers that send the data in pieces.
 * See include/gpud/npy.h for what is supported.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gpud/npy.h>

/* Data is written as '<' and little-endian files are loaded without a swap. */
#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "client/npy.c assumes a little-endian host"
#endif

#define NPY_MAGIC "\x93NUMPY"
#define NPY_MAGIC_LEN 6
#define NPY_ALIGN 64 /* numpy pads the preamble to a multiple of this */
#define SUPPORTED_DESCRS                                                                           \
	"'<f4', '<f8', '<i4', '<i8', '<c8', '<c16' (float32, float64, int32, int64, complex64, "   \
	"complex128; '=' or '|' also read as native, '>' as big-endian)"

/* Where messages go: every one starts with "name: ". */
struct ctx {
	const char *name;
	char *err;
	size_t errlen;
};

/* What the header says. */
struct hdr {
	gpud_dtype dtype;
	int swap; /* big-endian data */
	int ndim;
	uint64_t shape[GPUD_MAX_DIMS];
	size_t nbytes;
};

/* A position in the header text. */
struct cur {
	const char *start, *p, *end;
	const struct ctx *c;
};

static int fail(const struct ctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int fail(const struct ctx *c, const char *fmt, ...)
{
	va_list ap;
	size_t off;
	int n;

	if (!c->err || !c->errlen)
		return -1;
	n = snprintf(c->err, c->errlen, "%s: ", c->name);
	off = n < 0 ? 0 : (size_t)n;
	if (off >= c->errlen)
		off = c->errlen - 1;
	c->err[off] = '\0';
	va_start(ap, fmt);
	vsnprintf(c->err + off, c->errlen - off, fmt, ap);
	va_end(ap);
	return -1;
}

/* --- preamble ---------------------------------------------------------------- */

/*
 * Checks the magic and version in the first n bytes (n may be short) and
 * returns through *lenbytes how wide the header length field is.
 */
static int check_magic(const struct ctx *c, const unsigned char *b, size_t n, int *lenbytes)
{
	size_t m = n < NPY_MAGIC_LEN ? n : NPY_MAGIC_LEN;

	if (n == 0)
		return fail(c, "not a .npy file (the file is empty)");
	if (memcmp(b, NPY_MAGIC, m) != 0) {
		if (n >= 2 && b[0] == 'P' && b[1] == 'K')
			return fail(c, "not a .npy file (bad magic; this looks like a zip "
				       "archive such as .npz, which is not supported)");
		return fail(c, "not a .npy file (bad magic)");
	}
	if (n < NPY_MAGIC_LEN + 2)
		return fail(c,
			    "truncated preamble: file has %zu bytes, a .npy preamble "
			    "needs at least 10",
			    n);
	if (b[7] != 0 || b[6] < 1 || b[6] > 3)
		return fail(c, "unsupported .npy format version %u.%u (supported: 1.0, 2.0, 3.0)",
			    b[6], b[7]);
	*lenbytes = b[6] == 1 ? 2 : 4;
	return 0;
}

static size_t decode_len(const unsigned char *b, int lenbytes)
{
	if (lenbytes == 2)
		return (size_t)b[0] | (size_t)b[1] << 8;
	return (size_t)b[0] | (size_t)b[1] << 8 | (size_t)b[2] << 16 | (size_t)b[3] << 24;
}

/* --- header dict --------------------------------------------------------------- */

static int is_space(char ch)
{
	return ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r' || ch == '\f' || ch == '\v';
}

static int is_digit(char ch)
{
	return ch >= '0' && ch <= '9';
}

static int is_ident(char ch)
{
	return is_digit(ch) || (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || ch == '_';
}

static void skip_ws(struct cur *k)
{
	while (k->p < k->end && is_space(*k->p))
		k->p++;
}

static size_t offset(const struct cur *k)
{
	return (size_t)(k->p - k->start);
}

/* What sits at the cursor, for "got ..." in messages. */
static const char *got(const struct cur *k, char *buf, size_t len)
{
	unsigned char ch;

	if (k->p >= k->end)
		return "the end of the header";
	ch = (unsigned char)*k->p;
	if (ch >= 0x20 && ch < 0x7f)
		snprintf(buf, len, "'%c'", ch);
	else
		snprintf(buf, len, "byte 0x%02x", ch);
	return buf;
}

static int expected(const struct cur *k, const char *what)
{
	char g[16];

	return fail(k->c, "malformed header at offset %zu: expected %s, got %s", offset(k), what,
		    got(k, g, sizeof(g)));
}

/* A quoted string, 'x' or "x" (a u prefix allowed); no escapes, none are needed. */
static int parse_string(struct cur *k, const char **s, size_t *n)
{
	char q;

	if (k->p < k->end && (*k->p == 'u' || *k->p == 'U') && k->p + 1 < k->end &&
	    (k->p[1] == '\'' || k->p[1] == '"'))
		k->p++;
	if (k->p >= k->end || (*k->p != '\'' && *k->p != '"'))
		return expected(k, "a quoted string");
	q = *k->p++;
	*s = k->p;
	while (k->p < k->end && *k->p != q) {
		if (*k->p == '\\')
			return fail(k->c,
				    "malformed header at offset %zu: escape sequences in "
				    "strings are not supported",
				    offset(k));
		if (*k->p == '\n')
			break;
		k->p++;
	}
	if (k->p >= k->end || *k->p != q)
		return fail(k->c, "malformed header: string at offset %zu is not terminated",
			    (size_t)(*s - k->start) - 1);
	*n = (size_t)(k->p - *s);
	k->p++;
	return 0;
}

/*
 * n bytes of the header at s, for a message: printable ASCII as it is, every
 * other byte as \xHH (a NUL would end the text there and show what comes
 * before it as the whole); at most max bytes of s, then "...". buf has room
 * for 4 * max + 4 bytes.
 */
static const char *shown(char *buf, size_t len, const char *s, size_t n, size_t max)
{
	size_t o = 0;

	for (size_t i = 0; i < n && i < max && o + 5 <= len; i++) {
		unsigned char ch = (unsigned char)s[i];
		if (ch >= 0x20 && ch < 0x7f && ch != '\\')
			buf[o++] = (char)ch;
		else
			o += (size_t)snprintf(buf + o, len - o, "\\x%02x", ch);
	}
	if (n > max && o + 4 <= len) {
		memcpy(buf + o, "...", 3);
		o += 3;
	}
	buf[o] = '\0';
	return buf;
}

static int parse_descr(struct cur *k, struct hdr *h)
{
	static const struct {
		const char *code;
		gpud_dtype dtype;
	} codes[] = {
		{"f4", GPUD_F32}, {"f8", GPUD_F64}, {"i4", GPUD_I32},
		{"i8", GPUD_I64}, {"c8", GPUD_C64}, {"c16", GPUD_C128},
	};
	const char *s;
	size_t n;
	char txt[4 * 60 + 4];

	if (k->p < k->end && *k->p == '[') {
		/* Name the list in the message, up to its closing bracket. */
		const char *e = k->p;
		int depth = 0;

		while (e < k->end) {
			if (*e == '[')
				depth++;
			else if (*e == ']' && --depth == 0) {
				e++;
				break;
			}
			e++;
		}
		n = (size_t)(e - k->p);
		return fail(k->c, "unsupported dtype descr %s (a structured dtype); supported: %s",
			    shown(txt, sizeof(txt), k->p, n, 60), SUPPORTED_DESCRS);
	}
	if (parse_string(k, &s, &n))
		return -1;
	if ((n == 3 || n == 4) && (s[0] == '<' || s[0] == '=' || s[0] == '|' || s[0] == '>')) {
		for (size_t i = 0; i < sizeof(codes) / sizeof(codes[0]); i++) {
			if (strlen(codes[i].code) == n - 1 &&
			    memcmp(s + 1, codes[i].code, n - 1) == 0) {
				h->dtype = codes[i].dtype;
				h->swap = s[0] == '>';
				return 0;
			}
		}
	}
	return fail(k->c, "unsupported dtype descr '%s'; supported: %s",
		    shown(txt, sizeof(txt), s, n, 40), SUPPORTED_DESCRS);
}

static int parse_bool(struct cur *k, int *v)
{
	const char *s = k->p;
	size_t n;

	while (k->p < k->end && is_ident(*k->p))
		k->p++;
	n = (size_t)(k->p - s);
	if (n == 4 && memcmp(s, "True", 4) == 0)
		*v = 1;
	else if (n == 5 && memcmp(s, "False", 5) == 0)
		*v = 0;
	else {
		k->p = s;
		return expected(k, "True or False for 'fortran_order'");
	}
	return 0;
}

static int parse_dim(struct cur *k, uint64_t *v)
{
	const char *s = k->p;
	uint64_t x = 0;

	if (k->p < k->end && *k->p == '-') {
		const char *e = k->p + 1;

		while (e < k->end && is_digit(*e))
			e++;
		return fail(k->c, "malformed header: negative dimension %.*s in 'shape'",
			    (int)(e - s > 24 ? 24 : e - s), s);
	}
	while (k->p < k->end && is_digit(*k->p)) {
		unsigned d = (unsigned)(*k->p - '0');

		if (x > (UINT64_MAX - d) / 10)
			return fail(k->c,
				    "malformed header at offset %zu: dimension in 'shape' "
				    "does not fit in 64 bits",
				    (size_t)(s - k->start));
		x = x * 10 + d;
		k->p++;
	}
	/* Python 2 numpy wrote longs as 3L. */
	if (k->p > s && k->p < k->end && (*k->p == 'L' || *k->p == 'l'))
		k->p++;
	if (k->p == s || (k->p < k->end && (is_ident(*k->p) || *k->p == '.'))) {
		k->p = s;
		return expected(k, "a non-negative integer in 'shape'");
	}
	*v = x;
	return 0;
}

/*
 * A tuple of integers. "(5)" is taken as (5,): Python would read an int there
 * and numpy refuse it, but its meaning is not in doubt.
 */
static int parse_shape(struct cur *k, struct hdr *h)
{
	int n = 0;

	if (k->p >= k->end || *k->p != '(')
		return expected(k, "a tuple '(' for 'shape'");
	k->p++;
	skip_ws(k);
	while (k->p < k->end && *k->p != ')') {
		uint64_t v = 0;

		if (parse_dim(k, &v))
			return -1;
		if (n < GPUD_MAX_DIMS)
			h->shape[n] = v;
		n++;
		skip_ws(k);
		if (k->p < k->end && *k->p == ',') {
			k->p++;
			skip_ws(k);
		} else if (k->p >= k->end || *k->p != ')') {
			return expected(k, "',' or ')' in 'shape'");
		}
	}
	if (k->p >= k->end)
		return expected(k, "')' closing 'shape'");
	k->p++;
	if (n > GPUD_MAX_DIMS)
		return fail(k->c, "shape has %d dimensions; at most %d are supported", n,
			    GPUD_MAX_DIMS);
	h->ndim = n;
	return 0;
}

enum { KEY_DESCR = 1, KEY_FORTRAN = 2, KEY_SHAPE = 4 };

static int parse_header(const struct ctx *c, const char *text, size_t len, struct hdr *h)
{
	struct cur k = {.start = text, .p = text, .end = text + len, .c = c};
	unsigned seen = 0;
	int fortran = 0;
	char sh[256], txt[4 * 40 + 4];

	skip_ws(&k);
	if (k.p >= k.end || *k.p != '{')
		return expected(&k, "'{' opening the header dict");
	k.p++;
	for (;;) {
		const char *key;
		size_t n;
		unsigned bit;
		int r;

		skip_ws(&k);
		if (k.p < k.end && *k.p == '}')
			break;
		if (parse_string(&k, &key, &n))
			return -1;
		if (n == 5 && memcmp(key, "descr", 5) == 0)
			bit = KEY_DESCR;
		else if (n == 13 && memcmp(key, "fortran_order", 13) == 0)
			bit = KEY_FORTRAN;
		else if (n == 5 && memcmp(key, "shape", 5) == 0)
			bit = KEY_SHAPE;
		else
			return fail(c,
				    "malformed header: unexpected key '%s' (expected 'descr', "
				    "'fortran_order' and 'shape')",
				    shown(txt, sizeof(txt), key, n, 40));
		/* Python would keep the last one; two of a key mean a broken writer. */
		if (seen & bit)
			return fail(c, "malformed header: key '%.*s' appears twice", (int)n, key);
		seen |= bit;
		skip_ws(&k);
		if (k.p >= k.end || *k.p != ':')
			return expected(&k, "':' after a key");
		k.p++;
		skip_ws(&k);
		if (bit == KEY_DESCR)
			r = parse_descr(&k, h);
		else if (bit == KEY_FORTRAN)
			r = parse_bool(&k, &fortran);
		else
			r = parse_shape(&k, h);
		if (r)
			return -1;
		skip_ws(&k);
		if (k.p < k.end && *k.p == ',') {
			k.p++;
			continue;
		}
		if (k.p >= k.end || *k.p != '}')
			return expected(&k, "',' or '}' in the header dict");
	}
	k.p++;
	skip_ws(&k);
	if (k.p < k.end)
		return expected(&k, "nothing but padding after the header dict");
	if (seen != (KEY_DESCR | KEY_FORTRAN | KEY_SHAPE))
		return fail(c, "malformed header: missing key '%s'",
			    !(seen & KEY_DESCR)     ? "descr"
			    : !(seen & KEY_FORTRAN) ? "fortran_order"
						    : "shape");
	if (fortran)
		return fail(c, "Fortran-order arrays are not supported; save with "
			       "np.ascontiguousarray");
	h->nbytes = gpud_shape_bytes(h->shape, h->ndim, gpud_dtype_size(h->dtype));
	if (h->nbytes == SIZE_MAX) {
		gpud_shape_format(sh, sizeof(sh), h->shape, h->ndim);
		return fail(c, "shape %s of %s is too large: its byte count overflows size_t", sh,
			    gpud_dtype_name(h->dtype));
	}
	return 0;
}

/* --- load ------------------------------------------------------------------------- */

/* Bytes of one number of the dtype: a complex element is two of them. */
static size_t component_size(gpud_dtype t)
{
	return t == GPUD_C64 ? 4 : t == GPUD_C128 ? 8 : gpud_dtype_size(t);
}

static void swap_bytes(void *data, size_t nbytes, size_t esize)
{
	unsigned char *p = data;

	for (size_t i = 0; i + esize <= nbytes; i += esize) {
		if (esize == 4) {
			uint32_t v;

			memcpy(&v, p + i, 4);
			v = __builtin_bswap32(v);
			memcpy(p + i, &v, 4);
		} else {
			uint64_t v;

			memcpy(&v, p + i, 8);
			v = __builtin_bswap64(v);
			memcpy(p + i, &v, 8);
		}
	}
}

static void fill(gpud_array *out, const struct hdr *h, void *data)
{
	if (h->swap)
		swap_bytes(data, h->nbytes, component_size(h->dtype));
	out->dtype = h->dtype;
	out->ndim = h->ndim;
	memcpy(out->shape, h->shape, sizeof(out->shape));
	out->data = data;
	out->nbytes = h->nbytes;
}

static int truncated_header(const struct ctx *c, size_t hlen, size_t have)
{
	return fail(c, "truncated header: preamble declares %zu bytes of header, file has %zu",
		    hlen, have);
}

static int truncated_data(const struct ctx *c, size_t need, size_t have)
{
	return fail(c, "truncated: header declares %zu bytes of data, file has %zu", need, have);
}

int gpud_npy_parse(const void *buf, size_t len, const char *name, gpud_array *out, char *err,
		   size_t errlen)
{
	const struct ctx c = {name ? name : "(buffer)", err, errlen};
	const unsigned char *b = buf;
	struct hdr h = {0};
	size_t pre, hlen;
	int lenbytes;
	void *data;

	if (err && errlen)
		err[0] = '\0';
	if (!out)
		return fail(&c, "no output array given");
	memset(out, 0, sizeof(*out));
	if (!buf && len)
		return fail(&c, "no buffer given");
	if (check_magic(&c, b, len, &lenbytes))
		return -1;
	pre = NPY_MAGIC_LEN + 2 + (size_t)lenbytes;
	if (len < pre)
		return fail(&c,
			    "truncated preamble: file has %zu bytes, a version %u.0 preamble "
			    "needs %zu",
			    len, b[6], pre);
	hlen = decode_len(b + NPY_MAGIC_LEN + 2, lenbytes);
	if (len - pre < hlen)
		return truncated_header(&c, hlen, len - pre);
	if (parse_header(&c, (const char *)b + pre, hlen, &h))
		return -1;
	if (len - pre - hlen < h.nbytes)
		return truncated_data(&c, h.nbytes, len - pre - hlen);
	/* Trailing bytes after the data are ignored, as numpy does. */
	data = malloc(h.nbytes ? h.nbytes : 1);
	if (!data)
		return fail(&c, "out of memory allocating %zu bytes", h.nbytes);
	if (h.nbytes)
		memcpy(data, b + pre + hlen, h.nbytes);
	fill(out, &h, data);
	return 0;
}

static void *malloc_alloc(void *ctx, const gpud_array *meta)
{
	(void)ctx;
	return malloc(meta->nbytes ? meta->nbytes : 1);
}

/*
 * Reads n bytes unless end of file comes first: the count read, or -1 with
 * errno. Never reads past n, so a stream stays where the array ends.
 */
static ssize_t read_full(int fd, void *buf, size_t n)
{
	size_t got = 0;

	while (got < n) {
		ssize_t r = read(fd, (char *)buf + got, n - got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -1;
		if (r == 0)
			break;
		got += (size_t)r;
	}
	return (ssize_t)got;
}

/* read_full failed: says why (errno) and returns -1. */
static int read_error(const struct ctx *c)
{
	return fail(c, "read error: %s", strerror(errno));
}

/*
 * Reads the preamble, then the header, then the data straight into the
 * destination (a malloc'd buffer, or the caller's memory), so the data is
 * never copied twice. From a regular file, sizes are checked against what is
 * left of it before anything is allocated; a pipe is read as far as the
 * header says.
 */
/*
 * The preamble and header of the .npy at fd's offset into *h, fd left at the
 * data. A regular file is checked to hold all of the data (*rest: the bytes
 * after the header, else 0). 0, or -1 with the message.
 */
static int read_header(const struct ctx *c, int fd, struct hdr *h, size_t *rest)
{
	unsigned char pre[NPY_MAGIC_LEN + 2 + 4];
	struct stat st;
	size_t pl, hlen, file_rest = 0;
	ssize_t got_n;
	int lenbytes, reg, r = -1;
	char *text = NULL;

	if (fstat(fd, &st) != 0)
		return fail(c, "cannot stat: %s", strerror(errno));
	if (S_ISDIR(st.st_mode))
		return fail(c, "cannot read: %s", strerror(EISDIR));
	/* Sizes of regular files are checked before allocating anything. */
	off_t pos = S_ISREG(st.st_mode) ? lseek(fd, 0, SEEK_CUR) : -1;
	reg = pos >= 0;

	got_n = read_full(fd, pre, NPY_MAGIC_LEN + 2);
	if (got_n < 0)
		return read_error(c);
	if (check_magic(c, pre, (size_t)got_n, &lenbytes))
		return -1;
	pl = NPY_MAGIC_LEN + 2 + (size_t)lenbytes;
	got_n = read_full(fd, pre + NPY_MAGIC_LEN + 2, (size_t)lenbytes);
	if (got_n < lenbytes) {
		if (got_n < 0)
			return read_error(c);
		return fail(c,
			    "truncated preamble: file has %zu bytes, a version %u.0 "
			    "preamble needs %zu",
			    NPY_MAGIC_LEN + 2 + (size_t)got_n, pre[6], pl);
	}
	hlen = decode_len(pre + NPY_MAGIC_LEN + 2, lenbytes);
	if (reg) {
		uint64_t left = (uint64_t)st.st_size > (uint64_t)pos
					? (uint64_t)st.st_size - (uint64_t)pos
					: 0;
		file_rest = left > pl ? (size_t)(left - pl) : 0;
		if (file_rest < hlen)
			return truncated_header(c, hlen, file_rest);
		file_rest -= hlen;
	}
	text = malloc(hlen ? hlen : 1);
	if (!text)
		return fail(c, "out of memory allocating a %zu-byte header", hlen);
	got_n = read_full(fd, text, hlen);
	if (got_n < 0 || (size_t)got_n < hlen) {
		if (got_n < 0)
			read_error(c);
		else
			truncated_header(c, hlen, (size_t)got_n);
		goto out;
	}
	if (parse_header(c, text, hlen, h))
		goto out;
	if (reg && file_rest < h->nbytes) {
		truncated_data(c, h->nbytes, file_rest);
		goto out;
	}
	*rest = file_rest;
	r = 0;
out:
	free(text);
	return r;
}

static int load_fd(const struct ctx *c, int fd, gpud_npy_alloc_fn alloc, void *actx,
		   gpud_array *out)
{
	struct hdr h = {0};
	size_t rest;
	ssize_t got_n;
	int r = -1;
	void *data = NULL;

	if (read_header(c, fd, &h, &rest) != 0)
		return -1;
	{
		gpud_array meta = {.dtype = h.dtype, .ndim = h.ndim, .nbytes = h.nbytes};
		memcpy(meta.shape, h.shape, sizeof(meta.shape));
		data = alloc(actx, &meta);
	}
	if (!data) {
		fail(c, "out of memory allocating %zu bytes", h.nbytes);
		goto out;
	}
	got_n = read_full(fd, data, h.nbytes);
	if (got_n < 0 || (size_t)got_n < h.nbytes) {
		if (got_n < 0)
			read_error(c);
		else
			truncated_data(c, h.nbytes, (size_t)got_n);
		goto out;
	}
	fill(out, &h, data);
	data = NULL;
	r = 0;
out:
	if (alloc == malloc_alloc)
		free(data);
	return r;
}

int gpud_npy_load(const char *path, gpud_array *out, char *err, size_t errlen)
{
	return gpud_npy_load_into(path, malloc_alloc, NULL, out, err, errlen);
}

int gpud_npy_load_into(const char *path, gpud_npy_alloc_fn alloc, void *actx, gpud_array *out,
		       char *err, size_t errlen)
{
	const struct ctx c = {path ? path : "(null)", err, errlen};
	int fd, r;

	if (err && errlen)
		err[0] = '\0';
	if (!out)
		return fail(&c, "no output array given");
	memset(out, 0, sizeof(*out));
	if (!path)
		return fail(&c, "no path given");
	if (!alloc)
		alloc = malloc_alloc;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return fail(&c, "cannot open: %s", strerror(errno));
	r = load_fd(&c, fd, alloc, actx, out);
	close(fd); /* opened for reading: nothing to lose on close */
	return r;
}

int gpud_npy_open(const char *path, gpud_array *meta, int *fd, uint64_t *offset, char *err,
		  size_t errlen)
{
	const struct ctx c = {path ? path : "(null)", err, errlen};
	struct hdr h = {0};
	size_t rest;

	if (err && errlen)
		err[0] = '\0';
	if (!meta || !fd || !offset)
		return fail(&c, "no output given");
	memset(meta, 0, sizeof(*meta));
	*fd = -1;
	if (!path)
		return fail(&c, "no path given");
	int f = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (f < 0)
		return fail(&c, "cannot open: %s", strerror(errno));
	struct stat st;
	off_t at = -1;
	if (fstat(f, &st) != 0 || !S_ISREG(st.st_mode)) {
		close(f);
		return fail(&c, "not a regular file (its data has no offset to copy from): "
				"gpud_npy_load_into reads it");
	}
	if (read_header(&c, f, &h, &rest) != 0 || (at = lseek(f, 0, SEEK_CUR)) < 0) {
		if (at < 0 && err && errlen && !err[0])
			fail(&c, "cannot find its data's offset: %s", strerror(errno));
		close(f);
		return -1;
	}
	meta->dtype = h.dtype;
	meta->ndim = h.ndim;
	memcpy(meta->shape, h.shape, sizeof(meta->shape));
	meta->nbytes = h.nbytes;
	*fd = f;
	*offset = (uint64_t)at;
	return h.swap ? 1 : 0;
}

int gpud_npy_load_fd(int fd, const char *name, gpud_npy_alloc_fn alloc, void *actx, gpud_array *out,
		     char *err, size_t errlen)
{
	char fdname[32];

	snprintf(fdname, sizeof(fdname), "(fd %d)", fd);
	const struct ctx c = {name ? name : fdname, err, errlen};
	if (err && errlen)
		err[0] = '\0';
	if (!out)
		return fail(&c, "no output array given");
	memset(out, 0, sizeof(*out));
	if (fd < 0)
		return fail(&c, "no file descriptor given");
	return load_fd(&c, fd, alloc ? alloc : malloc_alloc, actx, out);
}

/* --- save ------------------------------------------------------------------------- */

static const char *descr_of(gpud_dtype t)
{
	switch (t) {
	case GPUD_F32:
		return "<f4";
	case GPUD_F64:
		return "<f8";
	case GPUD_I32:
		return "<i4";
	case GPUD_I64:
		return "<i8";
	case GPUD_C64:
		return "<c8";
	case GPUD_C128:
		return "<c16";
	default:
		return NULL;
	}
}

/*
 * The preamble and header of a (format 1.0, or 2.0 if the header needs it)
 * into buf, its length into *len: 0, or -1 with the message set. With
 * data_needed, an array with bytes but no data is refused too.
 */
static int make_header(const struct ctx *c, const gpud_array *a, int data_needed,
		       unsigned char *buf, size_t cap, size_t *len)
{
	char sh[256], dict[384];
	size_t need, dl, pl, pad, total, hlen;
	const char *descr;
	int lenbytes;

	if (!a)
		return fail(c, "no array given");
	descr = descr_of(a->dtype);
	if (!descr)
		return fail(c,
			    "cannot save dtype %d (supported: float32, float64, int32, int64, "
			    "complex64, complex128)",
			    (int)a->dtype);
	if (a->ndim < 0 || a->ndim > GPUD_MAX_DIMS)
		return fail(c, "cannot save an array of %d dimensions (0 to %d supported)", a->ndim,
			    GPUD_MAX_DIMS);
	gpud_shape_format(sh, sizeof(sh), a->shape, a->ndim);
	need = gpud_shape_bytes(a->shape, a->ndim, gpud_dtype_size(a->dtype));
	if (need == SIZE_MAX)
		return fail(c, "shape %s of %s is too large: its byte count overflows size_t", sh,
			    gpud_dtype_name(a->dtype));
	if (a->nbytes != need)
		return fail(c, "nbytes is %zu, but shape %s of %s needs %zu", a->nbytes, sh,
			    gpud_dtype_name(a->dtype), need);
	if (data_needed && !a->data && need)
		return fail(c, "array has %zu bytes but no data", need);

	/* numpy's own layout, trailing ", " included. */
	snprintf(dict, sizeof(dict), "{'descr': '%s', 'fortran_order': False, 'shape': %s, }",
		 descr, sh);
	dl = strlen(dict);
	/* Spaces and a final '\n' pad the preamble to a multiple of NPY_ALIGN. */
	lenbytes = 2;
	for (;;) {
		pl = NPY_MAGIC_LEN + 2 + (size_t)lenbytes;
		pad = (NPY_ALIGN - (pl + dl + 1) % NPY_ALIGN) % NPY_ALIGN;
		hlen = dl + pad + 1;
		if (lenbytes == 4 || hlen <= 0xffff)
			break;
		lenbytes = 4;
	}
	total = pl + hlen;
	if (total > cap)
		return fail(c, "the header needs %zu bytes, the buffer has %zu", total, cap);
	memcpy(buf, NPY_MAGIC, NPY_MAGIC_LEN);
	buf[6] = lenbytes == 2 ? 1 : 2;
	buf[7] = 0;
	for (int i = 0; i < lenbytes; i++)
		buf[8 + i] = (unsigned char)(hlen >> (8 * i));
	memcpy(buf + pl, dict, dl);
	memset(buf + pl + dl, ' ', pad);
	buf[total - 1] = '\n';
	*len = total;
	return 0;
}

size_t gpud_npy_header(const gpud_array *a, void *buf, size_t cap, char *err, size_t errlen)
{
	const struct ctx c = {"header", err, errlen};
	size_t len = 0;

	if (err && errlen)
		err[0] = '\0';
	if (!buf) {
		fail(&c, "no buffer given");
		return 0;
	}
	return make_header(&c, a, 0, buf, cap, &len) == 0 ? len : 0;
}

/* Writes n bytes: 0, or -1 with errno (0 for a write that wrote nothing). */
static int write_full(int fd, const void *buf, size_t n)
{
	size_t done = 0;

	while (done < n) {
		errno = 0;
		ssize_t w = write(fd, (const char *)buf + done, n - done);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		done += (size_t)w;
	}
	return 0;
}

/* Header and data onto fd: 0, or -1 with the message set. */
static int save_fd(const struct ctx *c, int fd, const gpud_array *a)
{
	unsigned char pre[GPUD_NPY_HEADER_MAX];
	size_t total;

	if (make_header(c, a, 1, pre, sizeof(pre), &total) != 0)
		return -1;
	if (write_full(fd, pre, total) != 0 ||
	    (a->nbytes && write_full(fd, a->data, a->nbytes) != 0))
		return fail(c, "write failed: %s", errno ? strerror(errno) : "short write");
	return 0;
}

int gpud_npy_save_fd(int fd, const char *name, const gpud_array *a, char *err, size_t errlen)
{
	char fdname[32];

	snprintf(fdname, sizeof(fdname), "(fd %d)", fd);
	const struct ctx c = {name ? name : fdname, err, errlen};
	if (err && errlen)
		err[0] = '\0';
	if (fd < 0)
		return fail(&c, "no file descriptor given");
	return save_fd(&c, fd, a);
}

int gpud_npy_save(const char *path, const gpud_array *a, char *err, size_t errlen)
{
	const struct ctx c = {path ? path : "(null)", err, errlen};
	unsigned char pre[GPUD_NPY_HEADER_MAX];
	struct stat st;
	size_t total;
	int fd, reg;

	if (err && errlen)
		err[0] = '\0';
	if (!path)
		return fail(&c, "no path given");
	/* Checked before the file is created: an array that cannot be saved leaves none. */
	if (make_header(&c, a, 1, pre, sizeof(pre), &total) != 0)
		return -1;
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
	if (fd < 0)
		return fail(&c, "cannot open for writing: %s", strerror(errno));
	reg = fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
	if (save_fd(&c, fd, a) != 0) {
		close(fd);
		goto failed;
	}
	if (close(fd) != 0) {
		fail(&c, "write failed: %s", strerror(errno));
		goto failed;
	}
	return 0;
failed:
	/*
	 * A short file would load as "truncated" later; better none at all. Only
	 * a regular file, though: the path may be a device or a pipe.
	 */
	if (reg)
		unlink(path);
	return -1;
}

/* --- the array ---------------------------------------------------------------------- */

void gpud_array_free(gpud_array *a)
{
	if (!a)
		return;
	free(a->data);
	memset(a, 0, sizeof(*a));
}

size_t gpud_array_count(const gpud_array *a)
{
	if (!a || a->ndim < 0 || a->ndim > GPUD_MAX_DIMS)
		return 0;
	return gpud_shape_bytes(a->shape, a->ndim, 1);
}
