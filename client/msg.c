/*
 * client/msg.c — a request's message and a reply's: packing a request (id
 * and version filled in, room for its payload), checking and unpacking a
 * reply, the body a call expects, the message limits hello set, the status
 * for an nng error, and the devices a hello or status reply lists. No state
 * of its own: any caller thread (the limits are read under c->mu).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <nng/nng.h>

#include "client/internal.h"

gpud_status client_nng_status(int rv)
{
	switch (rv) {
	case NNG_ETIMEDOUT:
		return GPUD_ETIMEDOUT;
	case NNG_ECANCELED:
		return GPUD_ECANCELED;
	case NNG_ENOMEM:
		return GPUD_ENOMEM;
	default:
		return GPUD_ETRANSPORT;
	}
}

size_t client_chunk_limit(gpud_client *c)
{
	pthread_mutex_lock(&c->mu);
	uint64_t m = c->info.max_message_size;
	pthread_mutex_unlock(&c->mu);
	return m ? (size_t)m : SIZE_MAX;
}

size_t client_reply_limit(gpud_client *c)
{
	pthread_mutex_lock(&c->mu);
	uint64_t m = c->max_message;
	pthread_mutex_unlock(&c->mu);
	return m ? (size_t)m : SIZE_MAX;
}

const char *client_limit_name(gpud_client *c, char *buf, size_t len)
{
	pthread_mutex_lock(&c->mu);
	if (c->quota_message && c->quota_message == c->info.max_message_size)
		snprintf(buf, len, "the message_size quota of tenant %s", c->info.tenant);
	else
		snprintf(buf, len,
			 "the daemon's message size limit (max_message_size in gpud.conf)");
	pthread_mutex_unlock(&c->mu);
	return buf;
}

gpud_status client_pack(gpud_client *c, Gpud__Request *req, const void *data, size_t plen,
			nng_msg **m, void **payload)
{
	size_t limit = client_chunk_limit(c);
	char what[160];
	int rv;
	if (limit != SIZE_MAX && plen > limit)
		return client_seterr(c, GPUD_E2BIG,
				     "a payload of %zu bytes exceeds %s of %zu bytes", plen,
				     client_limit_name(c, what, sizeof(what)), limit);
	req->version = GPUD_PROTOCOL_VERSION;
	req->id = __atomic_add_fetch(&c->next_id, 1, __ATOMIC_RELAXED);
	if ((rv = wire_pack(m, &req->base, data, plen, payload)) != 0)
		return client_seterr(c, GPUD_ENOMEM, "cannot build a request of %zu bytes: %s",
				     plen, nng_strerror(rv));
	return GPUD_OK;
}
gpud_status client_parse_reply(nng_msg *m, uint64_t id, Gpud__Response **resp, nng_msg **rmsg,
			       uint8_t **rpayload, size_t *rplen, char *msg, size_t msglen,
			       int *draining)
{
	const uint8_t *hdr;
	size_t hlen;
	uint8_t *pl;
	size_t pll;
	char err[256];

	if (wire_split(m, &hdr, &hlen, &pl, &pll, err, sizeof(err)) != 0) {
		nng_msg_free(m);
		snprintf(msg, msglen, "malformed reply: %s", err);
		return GPUD_EPROTO;
	}
	Gpud__Response *r = gpud__response__unpack(NULL, hlen, hdr);
	if (r == NULL) {
		nng_msg_free(m);
		snprintf(msg, msglen, "malformed reply: the header is not a gpud Response");
		return GPUD_EPROTO;
	}
	if (draining)
		*draining = r->draining;
	if (r->code != GPUD__STATUS__STATUS_OK) {
		gpud_status st = (gpud_status)r->code;
		if (r->code > GPUD__STATUS__STATUS_NO_SESSION)
			st = GPUD_EPROTO;
		snprintf(msg, msglen, "%s",
			 r->message && r->message[0] ? r->message : gpud_strerror(st));
		gpud__response__free_unpacked(r, NULL);
		nng_msg_free(m);
		return st;
	}
	if (r->id != id) {
		snprintf(msg, msglen, "reply to request %" PRIu64 " answers request %" PRIu64, id,
			 r->id);
		gpud__response__free_unpacked(r, NULL);
		nng_msg_free(m);
		return GPUD_EPROTO;
	}
	*resp = r;
	if (rmsg) {
		*rmsg = m;
		*rpayload = pl;
		*rplen = pll;
	} else {
		nng_msg_free(m);
	}
	return GPUD_OK;
}
gpud_status client_expect_body(gpud_client *c, Gpud__Response *r, Gpud__Response__BodyCase want,
			       const char *verb)
{
	if (r->body_case == want)
		return GPUD_OK;
	gpud__response__free_unpacked(r, NULL);
	return client_seterr(c, GPUD_EPROTO, "%s: the reply has no %s body", verb, verb);
}

void client_copy_devices(gpud_server_info *info, Gpud__Device **devs, size_t n)
{
	info->ndevices = 0;
	for (size_t i = 0; i < n && i < GPUD_MAX_DEVICES; i++) {
		gpud_device_info *d = &info->devices[info->ndevices++];
		d->index = devs[i]->index;
		snprintf(d->name, sizeof(d->name), "%s", devs[i]->name ? devs[i]->name : "");
		d->cc_major = devs[i]->cc_major;
		d->cc_minor = devs[i]->cc_minor;
		d->memory_total = devs[i]->memory_total;
		d->memory_free = devs[i]->memory_free;
		d->sm_count = devs[i]->sm_count;
		d->lost = devs[i]->lost;
		snprintf(d->lost_message, sizeof(d->lost_message), "%s",
			 devs[i]->lost_message ? devs[i]->lost_message : "");
		d->runs = devs[i]->runs;
		d->slots = devs[i]->slots;
		d->bytes_moving = devs[i]->bytes_moving;
		d->buffers = devs[i]->buffers;
		d->bytes_in_use = devs[i]->bytes_in_use;
		d->runs_total = devs[i]->runs_total;
		d->busy_s = devs[i]->busy_s;
		d->has_pool = devs[i]->pool != NULL;
		if (devs[i]->pool) {
			d->pool_in_use = devs[i]->pool->in_use;
			d->pool_cached = devs[i]->pool->cached;
			d->pool_high_water = devs[i]->pool->high_water;
			d->pool_limit = devs[i]->pool->limit;
		}
	}
}
