/*
 * client/region.c — host memory shared with gpud (proto/shm.h): sealed
 * memfds handed over with SCM_RIGHTS on the region socket, the caller's
 * gpud_host_alloc regions, and the scratch region that transfers from
 * ordinary memory bounce through.
 *
 * A region is registered in one session. After a reconnect, a
 * gpud_host_alloc region is handed to the new gpud again the first time it
 * is used (its memfd is kept for that); the scratch region is made anew.
 * On a gpud_connect_deferred connection before its first call,
 * gpud_host_alloc asks for memory lent before hello (client_region_claim:
 * no hello round trip first); the hello that the first call carries claims
 * it, and the region then takes that session's gen (client/session.c).
 * The region list is under c->mu, the scratch region under c->scratch_mu.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sys/mman.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include "client/internal.h"

/*
 * Host memory gpud lends (GPUD_SHM_LEND): already pinned and mapped in gpud,
 * so a fresh process pays neither. GPUD_OK with the region, or a status
 * (without an error message kept) where gpud lends none: the caller makes
 * its own memfd then.
 */
static gpud_status region_lend(gpud_client *c, size_t size, const char *path, const uint8_t *key,
			       uint64_t gen, int keep_fd, uint32_t flags, region *out)
{
	shm_reply rep;
	int fd;
	const char *off = getenv("GPUD_NO_LEND");
	if (off && off[0] && strcmp(off, "0") != 0)
		return GPUD_EUNSUPPORTED;
	gpud_status st = client_shm_exchange(c, -1, -1, size, GPUD_SHM_LEND | flags, path, key,
					     &rep, &fd);
	if (st != GPUD_OK)
		return st;
	if (fd < 0 || rep.size < size || rep.size > SIZE_MAX) {
		if (fd >= 0)
			close(fd);
		client_region_unmap(c, rep.region);
		return client_seterr(c, GPUD_EPROTO, "gpud lent %" PRIu64 " bytes (%s) for %zu",
				     rep.size, fd < 0 ? "no descriptor" : "too few", size);
	}
	/* Not populated here: only what a job touches is (client_populate). */
	void *base = mmap(NULL, (size_t)rep.size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (base == MAP_FAILED) {
		st = client_seterr(c, GPUD_ENOMEM, "mapping %" PRIu64 " bytes gpud lent: %s",
				   rep.size, strerror(errno));
		close(fd);
		client_region_unmap(c, rep.region);
		return st;
	}
	*out = (region){.base = base,
			.size = (size_t)rep.size,
			.id = rep.region,
			.gen = gen,
			.fd = -1,
			.pin = rep.pinned != 0};
	if (keep_fd)
		out->fd = fd; /* handed to a restarted gpud as the client's own */
	else
		close(fd);
	return GPUD_OK;
}

gpud_status client_region_make(gpud_client *c, size_t size, int pin, int keep_fd, region *out)
{
	char path[108];
	uint8_t key[GPUD_SHM_KEY_LEN];
	uint64_t gen, id;
	int fd;
	gpud_status st = GPUD_OK;
	void *base = MAP_FAILED;

	if (!client_shm(c, path, sizeof(path), key, &gen))
		return client_seterr(
			c, GPUD_EUNSUPPORTED,
			"shared host memory needs an ipc:// connection to a gpud that offers "
			"it (%s)",
			client_url(c));
	long page = sysconf(_SC_PAGESIZE);
	if (size == 0 || size > SIZE_MAX - (size_t)page)
		return client_seterr(c, GPUD_EARG, "gpud_host_alloc: cannot share %zu bytes", size);
	size = (size + (size_t)page - 1) / (size_t)page * (size_t)page;
	/* gpud's own pinned memory first; a region over the connection's limit
	 * is refused either way. */
	st = region_lend(c, size, path, key, gen, keep_fd, 0, out);
	if (st == GPUD_OK || st == GPUD_E2BIG || st == GPUD_ETIMEDOUT || st == GPUD_ECONNECT ||
	    st == GPUD_EPERM)
		return st;
	client_clear(c);
	st = GPUD_OK;
	if ((fd = memfd_create("gpud-region", MFD_CLOEXEC | MFD_ALLOW_SEALING)) < 0)
		return client_seterr(c, GPUD_ENOMEM, "memfd_create: %s", strerror(errno));
	/* Sealed against shrinking, so gpud's mapping can never fault. */
	if (ftruncate(fd, (off_t)size) != 0 ||
	    fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0) {
		st = client_seterr(c, GPUD_ENOMEM, "sizing a %zu-byte memfd: %s", size,
				   strerror(errno));
		goto out;
	}
	base = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (base == MAP_FAILED) {
		st = client_seterr(c, GPUD_ENOMEM, "mapping a %zu-byte memfd: %s", size,
				   strerror(errno));
		goto out;
	}
	if ((st = client_shm_register(c, fd, -1, size, pin ? GPUD_SHM_PIN : 0, path, key, &id)) !=
	    GPUD_OK)
		goto out;
	*out = (region){.base = base, .size = size, .id = id, .gen = gen, .fd = -1, .pin = pin};
	if (keep_fd) {
		out->fd = fd;
		fd = -1;
	}
	base = MAP_FAILED; /* kept */
out:
	if (base != MAP_FAILED)
		munmap(base, size);
	if (fd >= 0)
		close(fd);
	return st;
}

int client_may_claim(gpud_client *c)
{
	const char *off = getenv("GPUD_NO_CLAIM");
	if ((off && off[0] && strcmp(off, "0") != 0) || c->nurls != 1 ||
	    strncmp(client_url(c), "ipc://", 6) != 0)
		return 0;
	pthread_mutex_lock(&c->mu);
	int may = c->defer_hello && c->gen == 0 && !c->helloing && c->claim_state != CLAIM_SENT;
	pthread_mutex_unlock(&c->mu);
	return may;
}

/* gpud's region socket by its default name: its ipc:// path and ".shm". */
static int claim_path(gpud_client *c, char *path, size_t plen)
{
	int n = snprintf(path, plen, "%s.shm", client_url(c) + 6);
	return n > 0 && (size_t)n < plen;
}

int client_claim_shm(gpud_client *c, char *path, size_t plen, uint8_t *nonce)
{
	pthread_mutex_lock(&c->mu);
	int lent = c->claim_state == CLAIM_LENT && c->gen == 0;
	if (lent)
		memcpy(nonce, c->claim, sizeof(c->claim));
	pthread_mutex_unlock(&c->mu);
	return lent && claim_path(c, path, plen);
}

gpud_status client_region_claim(gpud_client *c, size_t size, region *out)
{
	char path[108];
	uint8_t nonce[GPUD_SHM_KEY_LEN];
	static const uint8_t zero[GPUD_SHM_KEY_LEN];
	long page = sysconf(_SC_PAGESIZE);
	if (!claim_path(c, path, sizeof(path)) || size == 0 || size > SIZE_MAX - (size_t)page)
		return GPUD_EUNSUPPORTED;
	size = (size + (size_t)page - 1) / (size_t)page * (size_t)page;
	pthread_mutex_lock(&c->mu);
	if (c->claim_state == CLAIM_NONE) {
		do {
			if (getrandom(c->claim, sizeof(c->claim), 0) != (ssize_t)sizeof(c->claim)) {
				pthread_mutex_unlock(&c->mu);
				return GPUD_EUNSUPPORTED;
			}
		} while (memcmp(c->claim, zero, sizeof(zero)) == 0);
	}
	memcpy(nonce, c->claim, sizeof(nonce));
	pthread_mutex_unlock(&c->mu);
	gpud_status st = region_lend(c, size, path, nonce, 0, 1, GPUD_SHM_CLAIM, out);
	if (st != GPUD_OK)
		return st;
	out->claimed = 1;
	pthread_mutex_lock(&c->mu);
	c->claim_state = CLAIM_LENT; /* the next hello carries the nonce */
	pthread_mutex_unlock(&c->mu);
	return GPUD_OK;
}

gpud_status client_region_unmap(gpud_client *c, uint64_t id)
{
	Gpud__Request req = GPUD__REQUEST__INIT;
	Gpud__UnmapRequest u = GPUD__UNMAP_REQUEST__INIT;
	Gpud__Response *r;
	gpud_status st;

	u.n_regions = 1;
	u.regions = &id;
	req.body_case = GPUD__REQUEST__BODY_UNMAP;
	req.unmap = &u;
	if ((st = client_call(c, &req, NULL, 0, &r, NULL, NULL, NULL)) != GPUD_OK)
		return st;
	gpud__response__free_unpacked(r, NULL);
	return GPUD_OK;
}

void *gpud_host_alloc(gpud_client *c, size_t bytes)
{
	region rg;
	uint64_t gen;
	if (c == NULL)
		return NULL;
	client_clear(c);
	/* Before the first call of a deferred connection: lent before hello,
	 * else (refused, or an older gpud) hello first and lent after it. */
	if (!client_may_claim(c) || client_region_claim(c, bytes, &rg) != GPUD_OK) {
		client_clear(c);
		if (client_session(c, &gen) != GPUD_OK)
			return NULL;
		if (client_region_make(c, bytes, 1, 1, &rg) != GPUD_OK)
			return NULL;
	}
	pthread_mutex_lock(&c->mu);
	if (c->nregions == c->cap) {
		size_t ncap = c->cap ? c->cap * 2 : 8;
		region *nr = realloc(c->regions, ncap * sizeof(*nr));
		if (nr == NULL) {
			pthread_mutex_unlock(&c->mu);
			client_region_unmap(c, rg.id);
			munmap(rg.base, rg.size);
			close(rg.fd);
			client_seterr(c, GPUD_ENOMEM, "gpud_host_alloc: out of memory");
			return NULL;
		}
		c->regions = nr;
		c->cap = ncap;
	}
	c->regions[c->nregions++] = rg;
	pthread_mutex_unlock(&c->mu);
	return rg.base;
}

gpud_status gpud_host_free(gpud_client *c, void *p)
{
	client_clear(c);
	pthread_mutex_lock(&c->mu);
	for (size_t i = 0; i < c->nregions; i++) {
		if (c->regions[i].base != p)
			continue;
		region rg = c->regions[i];
		c->regions[i] = c->regions[--c->nregions];
		int current = rg.gen == c->gen && rg.id != 0;
		pthread_mutex_unlock(&c->mu);
		/* Registered in a session before this one: that gpud dropped it. */
		gpud_status st = current ? client_region_unmap(c, rg.id) : GPUD_OK;
		if (st == GPUD_ENOSESSION || st == GPUD_EUNAVAILABLE || st == GPUD_ESHUTDOWN)
			st = GPUD_OK; /* the session it was in is gone, and the region with it */
		munmap(rg.base, rg.size);
		if (rg.fd >= 0)
			close(rg.fd);
		return st;
	}
	pthread_mutex_unlock(&c->mu);
	return client_seterr(c, GPUD_EARG, "gpud_host_free: %p is not from gpud_host_alloc", p);
}

/* 1 if all of [p, p + len) is in rg's memory. */
static int region_holds(const region *rg, const void *p, size_t len)
{
	const char *b = rg->base;
	return (const char *)p >= b && (size_t)((const char *)p - b) <= rg->size &&
	       len <= rg->size - (size_t)((const char *)p - b);
}

int client_region_fd_dup(gpud_client *c, const void *p, size_t len, off_t *off)
{
	int fd = -1;
	pthread_mutex_lock(&c->mu);
	for (size_t i = 0; i < c->nregions; i++) {
		const region *rg = &c->regions[i];
		if (rg->fd < 0 || !region_holds(rg, p, len))
			continue;
		*off = (off_t)((const char *)p - (const char *)rg->base);
		fd = fcntl(rg->fd, F_DUPFD_CLOEXEC, 0);
		break;
	}
	pthread_mutex_unlock(&c->mu);
	return fd;
}

uint64_t client_region_of(gpud_client *c, const void *p, size_t len, uint64_t *off)
{
	uint64_t id = 0;
	pthread_mutex_lock(&c->mu);
	for (size_t i = 0; i < c->nregions; i++) {
		region *rg = &c->regions[i];
		if (!region_holds(rg, p, len))
			continue;
		*off = (uint64_t)((const char *)p - (const char *)rg->base);
		if (rg->gen != c->gen && c->shm_path[0] && rg->fd >= 0) {
			/* gpud restarted (or the connection was re-made): hand it over again. */
			uint64_t nid;
			if (client_shm_register(c, rg->fd, -1, rg->size, rg->pin ? GPUD_SHM_PIN : 0,
						c->shm_path, c->key, &nid) == GPUD_OK) {
				rg->id = nid;
				rg->gen = c->gen;
			} else {
				rg->id = 0; /* used as ordinary memory meanwhile */
			}
			client_clear(c);
		}
		id = rg->gen == c->gen ? rg->id : 0;
		break;
	}
	pthread_mutex_unlock(&c->mu);
	return id;
}

gpud_status client_scratch(gpud_client *c, size_t want)
{
	uint64_t gen;
	char path[108];
	uint8_t key[GPUD_SHM_KEY_LEN];
	if (want > SCRATCH_MAX)
		want = SCRATCH_MAX;
	if (!client_shm(c, path, sizeof(path), key, &gen))
		return GPUD_EUNSUPPORTED;
	if (c->scratch.base && c->scratch.gen != gen) { /* of a session before: gone in gpud */
		munmap(c->scratch.base, c->scratch.size);
		c->scratch.base = NULL;
	}
	if (c->scratch.base && c->scratch.size >= want)
		return GPUD_OK;
	if (c->scratch.base) {
		region old = c->scratch;
		c->scratch.base = NULL;
		munmap(old.base, old.size);
		gpud_status st = client_region_unmap(c, old.id);
		if (st != GPUD_OK)
			return st;
	}
	/* Grown in steps, so a run of growing transfers pins a few times at most. */
	size_t size = 1u << 20;
	while (size < want)
		size *= 4;
	if (size > SCRATCH_MAX)
		size = SCRATCH_MAX;
	return client_region_make(c, size, 1, 0, &c->scratch);
}

void client_regions_free(gpud_client *c)
{
	for (size_t i = 0; i < c->nregions; i++) {
		munmap(c->regions[i].base, c->regions[i].size);
		if (c->regions[i].fd >= 0)
			close(c->regions[i].fd);
	}
	free(c->regions);
	c->regions = NULL;
	c->nregions = c->cap = 0;
	if (c->scratch.base)
		munmap(c->scratch.base, c->scratch.size);
	c->scratch.base = NULL;
}

void client_populate(const void *p, size_t len, int write)
{
	long page = sysconf(_SC_PAGESIZE);
	uintptr_t a = (uintptr_t)p & ~(uintptr_t)(page - 1);
	if (len == 0)
		return;
	len += (uintptr_t)p - a;
	/* A hint: where the kernel has no MADV_POPULATE_* the pages fault in as used. */
	(void)madvise((void *)a, len, write ? MADV_POPULATE_WRITE : MADV_POPULATE_READ);
}
