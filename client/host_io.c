/*
 * client/host_io.c — a file's bytes into memory (gpud_host_read) and
 * memory's into a file (gpud_host_write). For host memory shared with gpud
 * (gpud_host_alloc's, or any registered region), 4 MiB and more read and
 * 8 MiB and more written (GPUD_COPY_IN_MIN, GPUD_COPY_OUT_MIN): gpud
 * copies them itself, through its own mapping of the region, whose pages
 * it already faulted in (proto/shm.h, GPUD_SHM_READ/WRITE), so this process
 * never maps them. Where gpud does not (an older gpud, a file it will not
 * take, a copy of the same tenant's in flight): reading, the kernel copies
 * onto the region's memfd (sendfile at the memory's offset); anything else,
 * pread and pwrite here. GPUD_NO_FILE_COPY=1 leaves gpud's copies out.
 * Any thread: the memfds' file offsets, which sendfile writes at, are under
 * c->host_io_mu (one such copy at a time per client); gpud's copies each
 * take a region-socket connection of their own.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <sys/sendfile.h>
#include <unistd.h>

#include "client/internal.h"

/* Below these, copying here is as fast as gpud's copy with its round trip on the
 * region socket and its worker's wake-up (H200 host, bench/host_io.py and a fresh
 * gpuctl run: reading 1 MiB 0.34 ms here against 0.38 by gpud, 4 MiB 0.66 against
 * 0.55; writing 4 MiB 0.65 against 0.63, and slower by gpud in a fresh gpuctl;
 * 8 MiB 1.64 against 1.47). */
#define GPUD_COPY_IN_MIN ((size_t)4 << 20)
#define GPUD_COPY_OUT_MIN ((size_t)8 << 20)

/* The file fd ended at offset: the message. */
static gpud_status host_read_short(gpud_client *c, int fd, uint64_t offset, size_t len)
{
	return client_seterr(c, GPUD_EARG,
			     "gpud_host_read: file descriptor %d ends at byte %" PRIu64
			     ", before the %zu bytes asked from there",
			     fd, offset, len);
}

/* Reading (write 0) or writing file fd at offset failed with err: the message. */
static gpud_status host_io_failed(gpud_client *c, int write, int fd, uint64_t offset, int err)
{
	return client_seterr(c, GPUD_EARG, "%s: %s file descriptor %d at byte %" PRIu64 ": %s",
			     write ? "gpud_host_write" : "gpud_host_read",
			     write ? "writing" : "reading", fd, offset, strerror(err));
}

/* pread into dst: what sendfile cannot do. */
static gpud_status host_pread(gpud_client *c, char *dst, int fd, uint64_t offset, size_t len)
{
	while (len > 0) {
		ssize_t n = pread(fd, dst, len, (off_t)offset);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return host_io_failed(c, 0, fd, offset, errno);
		if (n == 0)
			return host_read_short(c, fd, offset, len);
		dst += n;
		offset += (uint64_t)n;
		len -= (size_t)n;
	}
	return GPUD_OK;
}

/* The arguments' checks, shared: GPUD_OK or GPUD_EARG with the message. */
static gpud_status host_io_args(gpud_client *c, const char *fn, const void *mem, int fd,
				uint64_t offset, size_t len)
{
	if (mem == NULL || fd < 0 || offset > (uint64_t)INT64_MAX ||
	    len > (uint64_t)INT64_MAX - offset)
		return client_seterr(c, GPUD_EARG, "%s: %s", fn,
				     mem == NULL ? "no memory given"
				     : fd < 0    ? "no file descriptor"
						 : "offset and length past 2^63");
	return GPUD_OK;
}

/* 1 if gpud copied [mem, mem + len) from or into the file (flags GPUD_SHM_*);
 * 0 where it did not (the caller copies; nothing of the message is kept).
 * *in_region: 1 if the memory is one of c's regions in this session. */
static int gpud_copies(gpud_client *c, const void *mem, int fd, uint64_t offset, size_t len,
		       uint32_t flags, int *in_region)
{
	char path[108];
	uint8_t key[GPUD_SHM_KEY_LEN];
	uint64_t gen, at;
	const char *off = getenv("GPUD_NO_FILE_COPY");
	size_t min = flags == GPUD_SHM_WRITE ? GPUD_COPY_OUT_MIN : GPUD_COPY_IN_MIN;
	uint64_t id = client_region_of(c, mem, len, &at);
	*in_region = id != 0;
	if (id == 0 || len < min || (off && off[0] && strcmp(off, "0") != 0))
		return 0;
	/* Memory lent before hello, not claimed yet: named by the claim's nonce. */
	if (!client_shm(c, path, sizeof(path), key, &gen)) {
		if (!client_claim_shm(c, path, sizeof(path), key))
			return 0;
		flags |= GPUD_SHM_CLAIM;
	}
	if (client_shm_file_io(c, fd, flags, id, at, len, offset, path, key) == GPUD_OK)
		return 1;
	client_clear(c);
	return 0;
}

gpud_status gpud_host_read(gpud_client *c, void *dst, int fd, uint64_t offset, size_t len)
{
	off_t at = 0;
	if (c == NULL)
		return GPUD_EARG;
	client_clear(c);
	if (len == 0)
		return GPUD_OK;
	if (host_io_args(c, "gpud_host_read", dst, fd, offset, len) != GPUD_OK)
		return GPUD_EARG;
	int in_region;
	if (gpud_copies(c, dst, fd, offset, len, GPUD_SHM_READ, &in_region))
		return GPUD_OK;
	int mfd = client_region_fd_dup(c, dst, len, &at);
	if (mfd < 0)
		return host_pread(c, dst, fd, offset, len);
	/* The memfd's own file offset is where sendfile writes: one copy at a time. */
	gpud_status st = GPUD_OK;
	off_t in = (off_t)offset;
	size_t left = len;
	pthread_mutex_lock(&c->host_io_mu);
	if (lseek(mfd, at, SEEK_SET) != at) {
		pthread_mutex_unlock(&c->host_io_mu);
		close(mfd);
		return host_pread(c, dst, fd, offset, len);
	}
	while (left > 0) {
		ssize_t n = sendfile(mfd, fd, &in, left);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && left == len && (errno == EINVAL || errno == ENOSYS)) {
			/* a file sendfile cannot read from: the pages by hand */
			st = host_pread(c, dst, fd, offset, len);
			break;
		}
		if (n < 0) {
			st = host_io_failed(c, 0, fd, (uint64_t)in, errno);
			break;
		}
		if (n == 0) {
			st = host_read_short(c, fd, (uint64_t)in, left);
			break;
		}
		left -= (size_t)n;
	}
	pthread_mutex_unlock(&c->host_io_mu);
	close(mfd);
	return st;
}

gpud_status gpud_host_write(gpud_client *c, const void *src, int fd, uint64_t offset, size_t len)
{
	if (c == NULL)
		return GPUD_EARG;
	client_clear(c);
	if (len == 0)
		return GPUD_OK;
	if (host_io_args(c, "gpud_host_write", src, fd, offset, len) != GPUD_OK)
		return GPUD_EARG;
	int fl = fcntl(fd, F_GETFL);
	if (fl >= 0 && (fl & O_APPEND))
		return client_seterr(c, GPUD_EARG,
				     "gpud_host_write: file descriptor %d is open with O_APPEND, "
				     "which writes at its end, not at byte %" PRIu64,
				     fd, offset);
	int in_region;
	if (gpud_copies(c, src, fd, offset, len, GPUD_SHM_WRITE, &in_region))
		return GPUD_OK;
	if (in_region)
		client_populate(src, len, 0); /* one call, not a fault a page as pwrite reads */
	const char *p = src;
	while (len > 0) {
		ssize_t n = pwrite(fd, p, len, (off_t)offset);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return host_io_failed(c, 1, fd, offset, n < 0 ? errno : ENOSPC);
		p += n;
		offset += (uint64_t)n;
		len -= (size_t)n;
	}
	return GPUD_OK;
}
