/*
 * daemon/region_io.c — files copied into and out of host regions by gpud
 * (daemon/region_io.h; the message in proto/shm.h).
 *
 * The descriptor is the client's: it opened the file with its own rights,
 * and gpud only reads or writes through it, at the offsets given, within
 * one of that connection's regions. Only a regular file is taken (a pipe,
 * socket or device could block a worker for ever, or have side effects), in
 * the access mode the copy needs, not O_APPEND (where pwrite ignores the
 * offset). gpud keeps no descriptor past the copy.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "daemon/loop.h"
#include "daemon/region_io.h"

#define CHUNK ((size_t)1 << 30) /* a pread/pwrite at most, as Linux moves ~2 GiB at most */

typedef struct region_io {
	region_server *rs;
	host_region *region; /* a reference held */
	gpud_tenant *tenant; /* tenants live as long as gpud */
	int fd, write;
	char *at;
	uint64_t length, file_offset, moved;
	int err; /* errno of a failed pread or pwrite, 0 */
	region_io_done_fn done;
	void *arg;
	uv_work_t work;
} region_io;

static const char *file_kind(mode_t m)
{
	return S_ISFIFO(m)   ? "a pipe or FIFO"
	       : S_ISSOCK(m) ? "a socket"
	       : S_ISCHR(m)  ? "a character device"
	       : S_ISBLK(m)  ? "a block device"
	       : S_ISDIR(m)  ? "a directory"
			     : "not a regular file";
}

/* On a worker: the whole length, or until the file ends (read) or fails. */
static void io_work(uv_work_t *w)
{
	region_io *io = w->data;
	uint64_t left = io->length, pos = io->file_offset;
	char *p = io->at;
	while (left > 0) {
		size_t n = left > CHUNK ? CHUNK : (size_t)left;
		ssize_t k = io->write ? pwrite(io->fd, p, n, (off_t)pos)
				      : pread(io->fd, p, n, (off_t)pos);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0) {
			io->err = errno;
			return;
		}
		if (k == 0) /* read: the file ended; write: nothing taken (ENOSPC without errno) */
			return;
		p += k;
		pos += (uint64_t)k;
		left -= (uint64_t)k;
		io->moved += (uint64_t)k;
	}
}

static void io_after(uv_work_t *w, int status)
{
	region_io *io = w->data;
	region_server *rs = io->rs;
	char why[256] = "";
	dstatus st = ST_OK;

	close(io->fd);
	rs->pending--;
	rs->file_io--;
	io->tenant->file_io--;
	uint64_t at = io->file_offset + io->moved;
	if (io->write)
		rs->file_io_written += io->moved;
	else
		rs->file_io_read += io->moved;
	if (io->err) {
		st = ST_INVALID;
		snprintf(why, sizeof(why), "%s the file at byte %" PRIu64 ": %s",
			 io->write ? "writing" : "reading", at, strerror(io->err));
	} else if (io->moved < io->length) {
		st = ST_INVALID;
		snprintf(why, sizeof(why),
			 io->write ? "the file took no more bytes at byte %" PRIu64 ": %" PRIu64
				     " of the %" PRIu64 " bytes asked were written"
				   : "the file ends at byte %" PRIu64 ": %" PRIu64
				     " of the %" PRIu64 " bytes asked were there",
			 at, io->moved, io->length);
	}
	region_unref(io->region);
	io->done(io->arg, st, io->moved, st == ST_OK ? NULL : why);
	free(io);
}

/* The refusal, at once: fd closed, done told (REFUSE returns from the caller). */
static void refuse(int fd, region_io_done_fn done, void *arg, dstatus st, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));
static void refuse(int fd, region_io_done_fn done, void *arg, dstatus st, const char *fmt, ...)
{
	char why[320];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	close(fd);
	done(arg, st, 0, why);
}

#define REFUSE(...)                                                                                \
	do {                                                                                       \
		refuse(fd, done, arg, __VA_ARGS__);                                                \
		return;                                                                            \
	} while (0)

void region_io_start(region_server *rs, gpud_tenant *t, host_region *r, const shm_file_io *m,
		     int fd, region_io_done_fn done, void *arg)
{
	struct stat st;
	ON_LOOP("region_io_start");
	uint32_t how = m->flags & ~(uint32_t)GPUD_SHM_CLAIM;
	int write = how == GPUD_SHM_WRITE;
	const char *verb = write ? "a copy into a file (GPUD_SHM_WRITE)"
				 : "a copy from a file (GPUD_SHM_READ)";

	if ((how != GPUD_SHM_READ && how != GPUD_SHM_WRITE) || m->reserved != 0)
		REFUSE(ST_INVALID,
		       "a file copy's flags must be GPUD_SHM_READ (%u) or GPUD_SHM_WRITE "
		       "(%u) alone (with GPUD_SHM_CLAIM before hello) and its reserved field 0, "
		       "got flags %u, reserved %u",
		       (unsigned)GPUD_SHM_READ, (unsigned)GPUD_SHM_WRITE, m->flags, m->reserved);
	if (t == NULL)
		REFUSE(ST_NO_SESSION, "%s before hello", verb);
	if (r == NULL)
		REFUSE(ST_NOT_FOUND, "%s: unknown host region %016" PRIx64, verb, m->region);
	if (m->length == 0 || m->offset > r->size || m->length > r->size - m->offset)
		REFUSE(ST_INVALID,
		       "%s: bytes [%" PRIu64 ", %" PRIu64 "+%" PRIu64
		       ") do not fit in host region %016" PRIx64 " of %zu bytes%s",
		       verb, m->offset, m->offset, m->length, m->region, r->size,
		       m->length == 0 ? " (a length of 0)" : "");
	if (m->file_offset > (uint64_t)INT64_MAX ||
	    m->length > (uint64_t)INT64_MAX - m->file_offset)
		REFUSE(ST_INVALID, "%s: file bytes %" PRIu64 "+%" PRIu64 " go past 2^63", verb,
		       m->file_offset, m->length);
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))
		REFUSE(ST_INVALID, "%s: the descriptor must be a regular file, got %s", verb,
		       file_kind(st.st_mode));
	int fl = fcntl(fd, F_GETFL), mode = fl & O_ACCMODE;
	if (fl < 0 || (write && mode == O_RDONLY) || (!write && mode == O_WRONLY))
		REFUSE(ST_INVALID, "%s: the file is not open for %s", verb,
		       write ? "writing" : "reading");
	if (write && (fl & O_APPEND))
		REFUSE(ST_INVALID,
		       "%s: the file is open with O_APPEND, which writes at its end, not "
		       "at byte %" PRIu64,
		       verb, m->file_offset);
	if (t->file_io > 0 || rs->file_io >= REGION_IO_MAX)
		REFUSE(ST_QUOTA,
		       "%s: gpud is copying %s already (one at a time per tenant, %d in "
		       "all); copy it in the client",
		       verb, t->file_io > 0 ? "a file for this tenant" : "files", REGION_IO_MAX);
	region_io *io = calloc(1, sizeof(*io));
	if (io == NULL)
		REFUSE(ST_OUT_OF_MEMORY, "%s: gpud is out of memory", verb);
	*io = (region_io){.rs = rs,
			  .region = r,
			  .tenant = t,
			  .fd = fd,
			  .write = write,
			  .at = (char *)r->base + m->offset,
			  .length = m->length,
			  .file_offset = m->file_offset,
			  .done = done,
			  .arg = arg};
	region_ref(r);
	rs->pending++;
	rs->file_io++;
	t->file_io++;
	io->work.data = io;
	uv_queue_work(rs->loop, &io->work, io_work, io_after);
}
