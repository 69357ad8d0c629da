/*
 * client/shm.c — the region socket (proto/shm.h): one registration there,
 * a memfd (and a doorbell) handed to gpud with SCM_RIGHTS, one reply, and a
 * descriptor gpud lends back; or one file copy, the file handed over. The region socket's path and key come from
 * the session (hello); a connection of its own per registration, on the
 * calling thread's stack: no state here.
 */
#include <errno.h>
#include <inttypes.h>
#include <string.h>

#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include "client/endpoint/endpoint.h"
#include "client/internal.h"

/*
 * One message on the region socket: msg (len bytes) with fds (nfds of them,
 * 0 to 2), one reply; a descriptor that comes with it goes to *rfd (else
 * -1). what names the request in a refusal's message.
 */
static gpud_status shm_round_trip(gpud_client *c, const void *msg, size_t len, const int *fds,
				  int nfds, const char *what, const char *shm_path, shm_reply *rep,
				  int *rfd)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int sock = -1;
	gpud_status st = GPUD_OK;

	*rfd = -1;
	union {
		struct cmsghdr align;
		char buf[CMSG_SPACE(2 * sizeof(int))];
	} cbuf;
	memset(&cbuf, 0, sizeof(cbuf));
	struct iovec iov = {.iov_base = (void *)msg, .iov_len = len};
	struct msghdr mh = {.msg_iov = &iov,
			    .msg_iovlen = 1,
			    .msg_control = nfds ? cbuf.buf : NULL,
			    .msg_controllen = nfds ? CMSG_SPACE((size_t)nfds * sizeof(int)) : 0};
	if (nfds) {
		struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN((size_t)nfds * sizeof(int));
		memcpy(CMSG_DATA(cm), fds, (size_t)nfds * sizeof(int));
	}
	memcpy(sa.sun_path, shm_path, strlen(shm_path) + 1);
	if ((sock = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0)) < 0 ||
	    connect(sock, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
		if (sock >= 0 && errno == EACCES) /* its mode and group, as the socket's */
			st = client_access_denied(c, "the region socket ", shm_path);
		else
			st = client_seterr(c, GPUD_ECONNECT, "region socket %s: %s", shm_path,
					   strerror(errno));
		goto out;
	}
	int t = client_timeout(c);
	if (t > 0) {
		struct timeval tv = {.tv_sec = t / 1000, .tv_usec = (t % 1000) * 1000};
		setsockopt(sock, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	}
	if (sendmsg(sock, &mh, MSG_NOSIGNAL) != (ssize_t)len) {
		st = client_seterr(c, GPUD_ETRANSPORT, "region socket %s: send: %s", shm_path,
				   strerror(errno));
		goto out;
	}
	union {
		struct cmsghdr align;
		char buf[CMSG_SPACE(sizeof(int))];
	} rbuf;
	struct iovec riov = {.iov_base = rep, .iov_len = sizeof(*rep)};
	struct msghdr rh = {.msg_iov = &riov,
			    .msg_iovlen = 1,
			    .msg_control = rbuf.buf,
			    .msg_controllen = sizeof(rbuf.buf)};
	ssize_t n = recvmsg(sock, &rh, MSG_CMSG_CLOEXEC);
	for (struct cmsghdr *cm = CMSG_FIRSTHDR(&rh); n >= 0 && cm; cm = CMSG_NXTHDR(&rh, cm))
		if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS &&
		    cm->cmsg_len >= CMSG_LEN(sizeof(int)) && *rfd < 0)
			memcpy(rfd, CMSG_DATA(cm), sizeof(int));
	if (n != (ssize_t)sizeof(*rep)) {
		st = client_seterr(c, n < 0 && errno == EAGAIN ? GPUD_ETIMEDOUT : GPUD_ETRANSPORT,
				   "region socket %s: no reply (%s)", shm_path,
				   n < 0 ? strerror(errno) : "connection closed");
		goto out;
	}
	rep->message[sizeof(rep->message) - 1] = '\0';
	if (rep->status != 0) {
		st = client_seterr(c,
				   rep->status > GPUD__STATUS__STATUS_NO_SESSION
					   ? GPUD_EPROTO
					   : (gpud_status)rep->status,
				   "gpud refused the %s: %s", what, rep->message);
		goto out;
	}
out:
	if (sock >= 0)
		close(sock);
	if (st != GPUD_OK && *rfd >= 0) {
		close(*rfd);
		*rfd = -1;
	}
	return st;
}

/* Every message's first fields: the magic and the session's key. */
static void shm_sign(char magic[8], uint8_t dst_key[GPUD_SHM_KEY_LEN], const uint8_t *key)
{
	memcpy(magic, GPUD_SHM_MAGIC, 8);
	memcpy(dst_key, key, GPUD_SHM_KEY_LEN);
}

gpud_status client_shm_exchange(gpud_client *c, int fd, int efd, size_t size, uint32_t flags,
				const char *shm_path, const uint8_t *key, shm_reply *rep, int *rfd)
{
	shm_register msg;
	memset(&msg, 0, sizeof(msg));
	shm_sign(msg.magic, msg.key, key);
	msg.size = size;
	msg.flags = flags;
	int fds[2] = {fd, efd}, nfds = fd < 0 ? 0 : efd >= 0 ? 2 : 1;
	return shm_round_trip(c, &msg, sizeof(msg), fds, nfds,
			      (flags & GPUD_SHM_RING)   ? "request ring"
			      : (flags & GPUD_SHM_LEND) ? "lend of host memory"
							: "host region",
			      shm_path, rep, rfd);
}

gpud_status client_shm_file_io(gpud_client *c, int fd, uint32_t flags, uint64_t region_id,
			       uint64_t offset, uint64_t length, uint64_t file_offset,
			       const char *shm_path, const uint8_t *key)
{
	shm_file_io msg;
	shm_reply rep;
	int rfd;
	memset(&msg, 0, sizeof(msg));
	shm_sign(msg.magic, msg.key, key);
	msg.flags = flags;
	msg.region = region_id;
	msg.offset = offset;
	msg.length = length;
	msg.file_offset = file_offset;
	gpud_status st = shm_round_trip(c, &msg, sizeof(msg), &fd, 1,
					(flags & GPUD_SHM_WRITE) ? "copy into a file"
								 : "copy from a file",
					shm_path, &rep, &rfd);
	if (rfd >= 0)
		close(rfd); /* none is expected */
	if (st == GPUD_OK && rep.size != length)
		st = client_seterr(c, GPUD_EPROTO, "gpud copied %" PRIu64 " bytes of %" PRIu64,
				   rep.size, length);
	return st;
}

gpud_status client_shm_register(gpud_client *c, int fd, int efd, size_t size, uint32_t flags,
				const char *shm_path, const uint8_t *key, uint64_t *id)
{
	shm_reply rep;
	int rfd;
	gpud_status st = client_shm_exchange(c, fd, efd, size, flags, shm_path, key, &rep, &rfd);
	if (rfd >= 0)
		close(rfd); /* none is expected */
	if (st == GPUD_OK)
		*id = rep.region;
	return st;
}
