/*
 * client/host_read.c — a file's bytes into memory (gpud_host_read): into
 * host memory shared with gpud (gpud_host_alloc's, whose memfd the client
 * keeps) the kernel copies them, sendfile onto the memfd at the memory's
 * offset, so this process never maps those pages; anywhere else, pread.
 * Any thread: the memfds' file offsets, which sendfile writes at, are under
 * c->host_io_mu (one such copy at a time per client).
 */
#include <errno.h>
#include <inttypes.h>
#include <string.h>

#include <sys/sendfile.h>
#include <unistd.h>

#include "client/internal.h"

/* The file fd ended at offset: the message. */
static gpud_status host_read_short(gpud_client *c, int fd, uint64_t offset, size_t len)
{
	return client_seterr(c, GPUD_EARG,
			     "gpud_host_read: file descriptor %d ends at byte %" PRIu64
			     ", before the %zu bytes asked from there",
			     fd, offset, len);
}

static gpud_status host_read_failed(gpud_client *c, int fd, uint64_t offset, int err)
{
	return client_seterr(c, GPUD_EARG,
			     "gpud_host_read: reading file descriptor %d at byte %" PRIu64 ": %s",
			     fd, offset, strerror(err));
}

/* pread into dst: what sendfile cannot do. */
static gpud_status host_pread(gpud_client *c, char *dst, int fd, uint64_t offset, size_t len)
{
	while (len > 0) {
		ssize_t n = pread(fd, dst, len, (off_t)offset);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return host_read_failed(c, fd, offset, errno);
		if (n == 0)
			return host_read_short(c, fd, offset, len);
		dst += n;
		offset += (uint64_t)n;
		len -= (size_t)n;
	}
	return GPUD_OK;
}

gpud_status gpud_host_read(gpud_client *c, void *dst, int fd, uint64_t offset, size_t len)
{
	off_t at = 0;
	if (c == NULL)
		return GPUD_EARG;
	client_clear(c);
	if (len == 0)
		return GPUD_OK;
	if (dst == NULL || fd < 0 || offset > (uint64_t)INT64_MAX ||
	    len > (uint64_t)INT64_MAX - offset)
		return client_seterr(c, GPUD_EARG, "gpud_host_read: %s",
				     dst == NULL ? "no memory to read into"
				     : fd < 0    ? "no file descriptor"
						 : "offset and length past 2^63");
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
			/* not a file sendfile reads (a pipe): the pages by hand */
			st = host_pread(c, dst, fd, offset, len);
			break;
		}
		if (n < 0) {
			st = host_read_failed(c, fd, (uint64_t)in, errno);
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
