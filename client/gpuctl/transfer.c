/*
 * client/gpuctl/transfer.c — arrays into gpud's buffers and back out to
 * .npy files or stdout. Without a progress bar each transfer is the
 * library's single call (gpud_alloc, gpud_alloc_npy, gpud_download_range:
 * shared memory over ipc://, message-sized pieces over tcp://); when a bar
 * may be drawn and the array is over PIECE_BYTES, gpuctl moves it in pieces
 * of that size (gpud_upload / gpud_download_range at offsets) and updates
 * the bar between them.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sysexits.h>

#include "client/gpuctl/gpuctl.h"

static int with_bar(uint64_t bytes)
{
	return progress_possible() && bytes > PIECE_BYTES;
}

/* A failed piece of a new buffer: the buffer goes too (a kept one would stay). */
static _Noreturn void die_piece(gpud_client *c, gpud_status st, gpud_handle h, const char *what)
{
	char msg[2048];
	snprintf(msg, sizeof(msg), "%s", gpud_errmsg(c));
	gpud_free(c, &h, 1);
	die_status(st, gpud_url(c), what, msg);
}

void upload_array(gpud_client *c, const gpud_array *a, const char *label, const char *what,
		  gpud_handle *out)
{
	gpud_status st;
	progress p;

	if (!with_bar(a->nbytes)) {
		if ((st = gpud_alloc(c, a->dtype, a->ndim, a->shape, a->data, out)) != GPUD_OK)
			die_call(c, st, what);
		trace("uploaded %s (%zu bytes)", what, a->nbytes);
		return;
	}
	if ((st = gpud_alloc(c, a->dtype, a->ndim, a->shape, NULL, out)) != GPUD_OK)
		die_call(c, st, what);
	progress_start(&p, "upload", label, a->nbytes);
	for (size_t off = 0, n; off < a->nbytes; off += n) {
		n = a->nbytes - off < PIECE_BYTES ? a->nbytes - off : PIECE_BYTES;
		if ((st = gpud_upload(c, *out, off, (const char *)a->data + off, n)) != GPUD_OK)
			die_piece(c, st, *out, what);
		progress_update(&p, off + n);
	}
	progress_finish(&p);
	trace("uploaded %s in pieces of %u bytes (%zu bytes)", what, PIECE_BYTES, a->nbytes);
}

void upload_file(gpud_client *c, const char *path, const char *what, gpud_handle *out,
		 gpud_array *meta)
{
	struct stat sb;
	char err[1024];
	gpud_status st;

	check_readable(what, path);
	if (stat(path, &sb) == 0 && with_bar((uint64_t)sb.st_size)) {
		gpud_array a;
		if (gpud_npy_load(path, &a, err, sizeof(err)) != 0)
			die(EX_DATAERR, "%s: %s", what, err);
		upload_array(c, &a, path, what, out);
		if (meta) {
			*meta = a;
			meta->data = NULL;
		}
		gpud_array_free(&a);
		return;
	}
	/* The file goes straight into the request (or a shared region): no copy in between. */
	if ((st = gpud_alloc_npy(c, path, out, meta)) != GPUD_OK)
		die_call(c, st, what);
	trace("uploaded %s from %s", what, path);
}

void download_to(gpud_client *c, gpud_handle h, const gpud_array *meta, const char *path,
		 const char *label, const char *what)
{
	unsigned char hdr[GPUD_NPY_HEADER_MAX];
	char err[512];
	gpud_status st;
	progress p;
	npy_out o;

	size_t hl = gpud_npy_header(meta, hdr, sizeof(hdr), err, sizeof(err));
	if (hl == 0)
		die(EX_PROTOCOL, "%s: gpud describes an array gpuctl cannot write: %s", what, err);
	size_t n = meta->nbytes;
	int bar = with_bar(n);
	size_t piece = bar ? PIECE_BYTES : n;
	char *buf = malloc(piece ? piece : 1);
	if (buf == NULL)
		die(EX_TEMPFAIL, "%s: out of memory for %zu bytes", what, piece);
	/* The first piece comes before the file is made: a refused download leaves none. */
	size_t first = n < piece ? n : piece;
	if (first && (st = gpud_download_range(c, h, 0, buf, first)) != GPUD_OK)
		die_call(c, st, what);
	out_open(&o, path, what);
	out_write(&o, hdr, hl);
	if (bar)
		progress_start(&p, "download", label, n);
	for (size_t off = 0, k = first; off < n; off += k) {
		k = n - off < piece ? n - off : piece;
		if (off > 0 && (st = gpud_download_range(c, h, off, buf, k)) != GPUD_OK) {
			out_abort(&o);
			die_call(c, st, what);
		}
		out_write(&o, buf, k);
		if (bar)
			progress_update(&p, off + k);
	}
	if (bar)
		progress_finish(&p);
	out_close(&o);
	free(buf);
	trace("downloaded %s into %s%s", what, strcmp(path, "-") ? path : "stdout",
	      bar ? " in pieces" : "");
}
