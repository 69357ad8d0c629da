/*
 * client/gpuctl/streams.c — .npy bytes in and out of gpuctl: input files
 * checked (a missing one is EX_NOINPUT), one array read from stdin, outputs
 * written to a file or to stdout (never to a terminal),
 * in one piece or as they arrive. A file that cannot be written completely
 * is removed, so no truncated .npy is left behind; every write failure exits
 * EX_IOERR naming the output and the file.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sysexits.h>
#include <unistd.h>

#include "client/gpuctl/gpuctl.h"

void read_stdin_npy(const char *cmd, const char *what, gpud_array *out)
{
	char err[1024];

	if (isatty(0))
		die_usage(cmd,
			  "%s: stdin is a terminal: pipe a .npy into gpuctl (... | gpuctl "
			  "...) or redirect it (< FILE.npy)",
			  what);
	if (gpud_npy_load_fd(0, "stdin", NULL, NULL, out, err, sizeof(err)) != 0)
		die(EX_DATAERR, "%s: %s", what, err);
	trace("read %s from stdin (%zu bytes)", what, out->nbytes);
}

void check_readable(const char *what, const char *path)
{
	struct stat st;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		die(EX_NOINPUT, "%s: cannot open %s: %s", what, path, strerror(errno));
	int dir = fstat(fd, &st) == 0 && S_ISDIR(st.st_mode);
	close(fd);
	if (dir)
		die(EX_NOINPUT, "%s: cannot read %s: %s", what, path, strerror(EISDIR));
}

void check_stdout_not_tty(const char *cmd)
{
	if (isatty(1))
		die_usage(cmd, "-o -: stdout is a terminal; .npy data is binary: redirect it "
			       "(> FILE.npy) or pipe it (| python3 ...)");
}

static const char *shown_path(const npy_out *o)
{
	return !strcmp(o->path, "-") ? "stdout" : o->path;
}

void out_open(npy_out *o, const char *path, const char *what)
{
	struct stat st;

	o->path = path;
	o->what = what;
	o->is_reg = 0;
	o->written = 0;
	if (!strcmp(path, "-")) {
		o->fd = 1;
		return;
	}
	/* Not O_TRUNC: an existing file is written over in place and cut to its
	 * new length on close (out_close), so its page-cache pages are reused
	 * instead of freed and allocated again (for 4 MiB on an H200 host: most
	 * of the 2.5 ms the write took). */
	o->fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0666);
	if (o->fd < 0)
		die(EX_IOERR, "%s: cannot open %s for writing: %s", what, path, strerror(errno));
	o->is_reg = fstat(o->fd, &st) == 0 && S_ISREG(st.st_mode);
}

void out_abort(npy_out *o)
{
	if (o->fd > 1) {
		close(o->fd);
		if (o->is_reg)
			unlink(o->path);
	}
	o->fd = -1;
}

static _Noreturn void out_failed(npy_out *o, int err)
{
	char path[1024];
	snprintf(path, sizeof(path), "%s", shown_path(o));
	out_abort(o);
	die(EX_IOERR, "%s: writing %s failed: %s", o->what, path,
	    err ? strerror(err) : "nothing was written");
}

void out_write(npy_out *o, const void *buf, size_t n)
{
	size_t done = 0;
	while (done < n) {
		errno = 0;
		ssize_t w = write(o->fd, (const char *)buf + done, n - done);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			out_failed(o, errno);
		done += (size_t)w;
	}
	o->written += n;
}

void out_close(npy_out *o)
{
	if (o->fd > 1 && o->is_reg && ftruncate(o->fd, (off_t)o->written) != 0)
		out_failed(o, errno);
	if (o->fd > 1 && close(o->fd) != 0) {
		int err = errno;
		o->fd = -1;
		if (o->is_reg)
			unlink(o->path);
		die(EX_IOERR, "%s: writing %s failed: %s", o->what, o->path, strerror(err));
	}
	o->fd = -1;
}

/* a into path, its data written here, or by gpud where c is given and path a regular file. */
static void save(gpud_client *c, const char *path, const char *what, const gpud_array *a)
{
	unsigned char hdr[GPUD_NPY_HEADER_MAX];
	char err[512];
	npy_out o;

	size_t hl = gpud_npy_header(a, hdr, sizeof(hdr), err, sizeof(err));
	if (hl == 0)
		die(EX_PROTOCOL, "%s: gpud sent an array gpuctl cannot write: %s", what, err);
	out_open(&o, path, what);
	out_write(&o, hdr, hl);
	if (c && o.is_reg && a->nbytes > 0) {
		gpud_status st = gpud_host_write(c, a->data, o.fd, o.written, a->nbytes);
		if (st != GPUD_OK) {
			char msg[1024];
			snprintf(msg, sizeof(msg), "%s", gpud_errmsg(c));
			out_abort(&o);
			die(EX_IOERR, "%s: writing %s failed: %s", what, path, msg);
		}
		o.written += a->nbytes;
	} else {
		out_write(&o, a->data, a->nbytes);
	}
	out_close(&o);
	trace("wrote %s into %s", what, shown_path(&o));
}

void save_array(const char *path, const char *what, const gpud_array *a)
{
	save(NULL, path, what, a);
}

void save_host_array(gpud_client *c, const char *path, const char *what, const gpud_array *a)
{
	save(c, path, what, a);
}
