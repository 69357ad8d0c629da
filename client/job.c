/*
 * client/job.c — asynchronous jobs: gpud_run_async and gpud_call_async send
 * a run request on an nng context of the job's own and return; the reply
 * is taken by the aio's callback on an nng thread (job_step), which ends
 * the job: its status and message, its reply kept for gpud_job_outputs /
 * gpud_job_results, waiters woken, the caller's callback run.
 *
 * A job's fields after submission are under its mu, except those set once
 * before the send (kind, id, gen, fn, arg, names) and the aio's, which
 * only the callback touches until the job has ended. The client lists its
 * jobs (c->jobs, under c->mu): gpud_close ends them (the socket closes under
 * them) and orphans them (c NULL), so a job freed after its client touches
 * nothing of it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <nng/nng.h>
#include <nng/protocol/reqrep0/req.h>

#include "client/internal.h"

enum { JOB_RUN, JOB_CALL };

struct gpud_job {
	gpud_client *c;               /* NULL once the client closed */
	struct gpud_job *next, *prev; /* c->jobs */
	int kind;
	uint64_t id, gen;
	gpud_job_fn fn;
	void *arg;
	char *names; /* the buffer arguments' names, '\n'-ended: outputs the caller passed */
	nng_ctx ctx;
	nng_aio *aio;
	int received; /* the send is done; the aio now receives */

	pthread_mutex_t mu;
	pthread_cond_t cv;
	int done;
	gpud_status st;
	char msg[1024];
	Gpud__Response *resp; /* the reply, until freed */
	nng_msg *rmsg;
	uint8_t *pl;
	size_t pll;
	int taken; /* outputs or results handed out */
};

static void job_end(gpud_job *j, gpud_status st)
{
	pthread_mutex_lock(&j->mu);
	j->st = st;
	j->done = 1;
	pthread_cond_broadcast(&j->cv);
	pthread_mutex_unlock(&j->mu);
	if (j->fn)
		j->fn(j, j->arg);
}

/* gpud said in the job's session that it is shutting down: it never took the job. */
static int job_draining(gpud_job *j)
{
	pthread_mutex_lock(&j->c->mu);
	int d = j->c->draining_gen == j->gen;
	pthread_mutex_unlock(&j->c->mu);
	return d;
}

/* The aio's callback: the send finished, then the reply came (or not). */
static void job_step(void *arg)
{
	gpud_job *j = arg;
	int rv = nng_aio_result(j->aio);

	if (!j->received) {
		if (rv != 0) {
			nng_msg_free(nng_aio_get_msg(j->aio));
			if (rv != NNG_ECLOSED && job_draining(j)) { /* ECLOSED: gpud_close */
				snprintf(j->msg, sizeof(j->msg),
					 "gpud at %.800s is shutting down and closed the "
					 "connection before the job was sent: it did not run",
					 client_url(j->c));
				job_end(j, GPUD_ESHUTDOWN);
				return;
			}
			snprintf(j->msg, sizeof(j->msg), "sending to %.900s: %s", client_url(j->c),
				 nng_strerror(rv));
			job_end(j, client_nng_status(rv));
			return;
		}
		j->received = 1;
		int t = client_timeout(j->c);
		nng_aio_set_timeout(j->aio, t > 0 ? t : NNG_DURATION_INFINITE);
		nng_ctx_recv(j->ctx, j->aio);
		return;
	}
	if (rv == NNG_ETIMEDOUT) {
		client_cancel_async(j->c, j->id); /* nobody will collect it */
		snprintf(j->msg, sizeof(j->msg),
			 "no reply within %d ms; the job is cancelled in gpud",
			 client_timeout(j->c));
		job_end(j, GPUD_ETIMEDOUT);
		return;
	}
	if (rv != 0) {
		client_session_lost(j->c, j->gen);
		int down = rv != NNG_ECLOSED && job_draining(j); /* ECLOSED: gpud_close */
		if (down)
			snprintf(j->msg, sizeof(j->msg),
				 "gpud at %.800s is shutting down and closed the connection before "
				 "taking the job: it did not run",
				 client_url(j->c));
		else
			snprintf(j->msg, sizeof(j->msg),
				 "the connection to gpud at %.800s was lost while the job was in "
				 "flight (%s); it may or may not have run",
				 client_url(j->c), nng_strerror(rv));
		job_end(j, down ? GPUD_ESHUTDOWN : client_nng_status(rv));
		return;
	}
	Gpud__Response *r = NULL;
	nng_msg *rm = NULL;
	uint8_t *pl = NULL;
	size_t pll = 0;
	int draining = 0;
	gpud_status st = client_parse_reply(nng_aio_get_msg(j->aio), j->id, &r, &rm, &pl, &pll,
					    j->msg, sizeof(j->msg), &draining);
	if (draining)
		client_session_draining(j->c, j->gen);
	if (st == GPUD_ENOSESSION) {
		client_session_lost(j->c, j->gen);
		snprintf(j->msg, sizeof(j->msg),
			 "the connection to gpud was re-made (gpud restarted, or the link "
			 "dropped) before the job reached it: it did not run; submit it again");
	} else if (st == GPUD_OK && r->body_case != GPUD__RESPONSE__BODY_RUN) {
		snprintf(j->msg, sizeof(j->msg), "run: the reply has no run body");
		gpud__response__free_unpacked(r, NULL);
		nng_msg_free(rm);
		r = NULL;
		rm = NULL;
		st = GPUD_EPROTO;
	}
	pthread_mutex_lock(&j->mu);
	j->resp = r;
	j->rmsg = rm;
	j->pl = pl;
	j->pll = pll;
	pthread_mutex_unlock(&j->mu);
	job_end(j, st);
}

static gpud_status submit(gpud_client *c, int kind, const char *kernel, const gpud_arg *args,
			  size_t nargs, gpud_job_fn fn, void *arg, gpud_job **out)
{
	const char *verb = kind == JOB_RUN ? "gpud_run_async" : "gpud_call_async";
	nng_msg *m;
	gpud_status st;
	int rv;

	*out = NULL;
	gpud_job *j = calloc(1, sizeof(*j));
	if (j == NULL)
		return client_seterr(c, GPUD_ENOMEM, "%s: out of memory", verb);
	j->c = c;
	j->kind = kind;
	j->fn = fn;
	j->arg = arg;
	pthread_mutex_init(&j->mu, NULL);
	pthread_cond_init(&j->cv, NULL);
	if ((st = client_session(c, &j->gen)) != GPUD_OK)
		goto fail;
	if ((st = client_run_msg(c, verb, kernel, args, nargs, kind == JOB_CALL, 0, 0, NULL, &m,
				 &j->id, kind == JOB_RUN ? &j->names : NULL, NULL)) != GPUD_OK)
		goto fail;
	if ((rv = nng_ctx_open(&j->ctx, c->sock)) != 0) {
		nng_msg_free(m);
		st = client_seterr(c, GPUD_ECONNECT, "%s: nng context: %s", verb, nng_strerror(rv));
		goto fail;
	}
	if ((rv = nng_aio_alloc(&j->aio, job_step, j)) != 0) {
		nng_ctx_close(j->ctx);
		nng_msg_free(m);
		st = client_seterr(c, GPUD_ENOMEM, "%s: nng aio: %s", verb, nng_strerror(rv));
		goto fail;
	}
	nng_ctx_set_ms(j->ctx, NNG_OPT_REQ_RESENDTIME, NNG_DURATION_INFINITE);
	pthread_mutex_lock(&c->mu);
	j->next = c->jobs;
	if (c->jobs)
		c->jobs->prev = j;
	c->jobs = j;
	pthread_mutex_unlock(&c->mu);
	int t = client_timeout(c);
	nng_aio_set_timeout(j->aio, t > 0 ? t : c->connect_timeout_ms);
	nng_aio_set_msg(j->aio, m);
	*out = j;
	nng_ctx_send(j->ctx, j->aio);
	return GPUD_OK;
fail:
	pthread_mutex_destroy(&j->mu);
	pthread_cond_destroy(&j->cv);
	free(j->names);
	free(j);
	return st;
}

gpud_status gpud_run_async(gpud_client *c, const char *kernel, const gpud_arg *args, size_t nargs,
			   gpud_job_fn done, void *arg, gpud_job **out)
{
	CLIENT_RETRY(c, submit(c, JOB_RUN, kernel, args, nargs, done, arg, out));
}

gpud_status gpud_call_async(gpud_client *c, const char *kernel, const gpud_arg *args, size_t nargs,
			    gpud_job_fn done, void *arg, gpud_job **out)
{
	CLIENT_RETRY(c, submit(c, JOB_CALL, kernel, args, nargs, done, arg, out));
}

gpud_status gpud_job_wait(gpud_job *j, int timeout_ms)
{
	gpud_status st;
	pthread_mutex_lock(&j->mu);
	if (timeout_ms < 0) {
		while (!j->done)
			pthread_cond_wait(&j->cv, &j->mu);
	} else if (!j->done) {
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_sec += timeout_ms / 1000;
		ts.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
		if (ts.tv_nsec >= 1000000000L) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000L;
		}
		while (!j->done && pthread_cond_timedwait(&j->cv, &j->mu, &ts) == 0)
			;
	}
	st = j->done ? j->st : GPUD_ETIMEDOUT;
	pthread_mutex_unlock(&j->mu);
	return st;
}

int gpud_job_done(const gpud_job *j)
{
	gpud_job *m = (gpud_job *)j;
	pthread_mutex_lock(&m->mu);
	int d = j->done;
	pthread_mutex_unlock(&m->mu);
	return d;
}

const char *gpud_job_errmsg(const gpud_job *j)
{
	gpud_job *m = (gpud_job *)j;
	pthread_mutex_lock(&m->mu);
	const char *s = j->done && j->st != GPUD_OK ? j->msg : "";
	pthread_mutex_unlock(&m->mu);
	return s;
}

gpud_status gpud_job_cancel(gpud_job *j)
{
	Gpud__Request req = GPUD__REQUEST__INIT;
	Gpud__CancelRequest cr = GPUD__CANCEL_REQUEST__INIT;
	Gpud__Response *r;
	gpud_client *c = j->c;
	gpud_status st;

	if (c == NULL || gpud_job_done(j))
		return GPUD_OK;
	client_clear(c);
	cr.request = j->id;
	req.body_case = GPUD__REQUEST__BODY_CANCEL;
	req.cancel = &cr;
	if ((st = client_call(c, &req, NULL, 0, &r, NULL, NULL, NULL)) != GPUD_OK) {
		/* gpud restarted or is gone: the job ends with the connection. */
		return st == GPUD_ENOSESSION ? GPUD_OK : st;
	}
	gpud__response__free_unpacked(r, NULL);
	return GPUD_OK;
}

/* 1 if output `name` was passed in as a buffer argument (it is the caller's). */
static int passed_in(const gpud_job *j, const char *name)
{
	size_t n = strlen(name);
	for (const char *p = j->names; p && *p;) {
		const char *e = strchr(p, '\n');
		if ((size_t)(e - p) == n && memcmp(p, name, n) == 0)
			return 1;
		p = e + 1;
	}
	return 0;
}

/* The outputs gpud made that the caller has not taken: freed in gpud (j ended OK). */
static void free_untaken(gpud_job *j, size_t from)
{
	gpud_handle hs[64];
	size_t n = 0;
	for (size_t i = from; i < j->resp->run->n_outputs && n < 64; i++) {
		Gpud__Output *o = j->resp->run->outputs[i];
		if (o->buffer && o->buffer->handle && !passed_in(j, o->name))
			hs[n++] = o->buffer->handle;
	}
	if (n > 0)
		gpud_free(j->c, hs, n);
}

/* The job has ended well and its results, of kind, are there to be taken (by verb). */
static gpud_status job_ready(gpud_job *j, int kind, const char *verb, int no_outs)
{
	gpud_status st = gpud_job_wait(j, 0);
	if (st == GPUD_ETIMEDOUT)
		return client_seterr(j->c, GPUD_EARG,
				     "%s: the job has not ended (gpud_job_wait first)", verb);
	if (st != GPUD_OK)
		return client_seterr(j->c, st, "%s", j->msg);
	if (j->kind != kind)
		return client_seterr(j->c, GPUD_EARG, "%s: a %s job has %s", verb,
				     j->kind == JOB_RUN ? "gpud_run_async" : "gpud_call_async",
				     j->kind == JOB_RUN ? "outputs (gpud_job_outputs)"
							: "results (gpud_job_results)");
	if (j->taken)
		return client_seterr(j->c, GPUD_EARG, "%s: already taken", verb);
	if (no_outs)
		return client_seterr(j->c, GPUD_EARG, "%s: outs is NULL", verb);
	return GPUD_OK;
}

gpud_status gpud_job_outputs(gpud_job *j, gpud_output *outs, size_t cap, size_t *nouts,
			     gpud_run_info *info)
{
	gpud_status st = job_ready(j, JOB_RUN, "gpud_job_outputs", cap > 0 && outs == NULL);
	if (nouts)
		*nouts = 0;
	if (st != GPUD_OK)
		return st;
	client_run_outputs(j->resp, outs, cap, nouts, info);
	j->taken = 1;
	free_untaken(j, cap);
	return GPUD_OK;
}

gpud_status gpud_job_results(gpud_job *j, gpud_result *outs, size_t cap, size_t *nouts,
			     gpud_run_info *info)
{
	char msg[1024];
	gpud_status st = job_ready(j, JOB_CALL, "gpud_job_results", cap > 0 && outs == NULL);
	if (nouts)
		*nouts = 0;
	if (st != GPUD_OK)
		return st;
	st = client_call_results(j->resp, j->pl, j->pll, NULL, outs, cap, nouts, info, NULL, msg,
				 sizeof(msg));
	if (st != GPUD_OK)
		return client_seterr(j->c, st, "%s", msg);
	j->taken = 1;
	return GPUD_OK;
}

void gpud_job_free(gpud_job *j)
{
	if (j == NULL)
		return;
	if (!gpud_job_done(j))
		gpud_job_cancel(j);
	gpud_job_wait(j, -1);
	/* The callback has returned (nng_aio_stop waits for it) before anything goes. */
	nng_aio_stop(j->aio);
	gpud_client *c = j->c;
	if (c) {
		if (j->kind == JOB_RUN && j->st == GPUD_OK && !j->taken && j->resp)
			free_untaken(j, 0);
		pthread_mutex_lock(&c->mu);
		if (j->prev)
			j->prev->next = j->next;
		else
			c->jobs = j->next;
		if (j->next)
			j->next->prev = j->prev;
		pthread_mutex_unlock(&c->mu);
	}
	if (j->resp)
		gpud__response__free_unpacked(j->resp, NULL);
	if (j->rmsg)
		nng_msg_free(j->rmsg);
	nng_aio_free(j->aio);
	if (c)
		nng_ctx_close(j->ctx);
	pthread_mutex_destroy(&j->mu);
	pthread_cond_destroy(&j->cv);
	free(j->names);
	free(j);
}

void client_jobs_orphan(gpud_client *c)
{
	/* The socket is closed: every job in flight ends now (job_step). */
	pthread_mutex_lock(&c->mu);
	gpud_job *j = c->jobs;
	c->jobs = NULL;
	pthread_mutex_unlock(&c->mu);
	for (; j; j = j->next) {
		nng_aio_stop(j->aio);
		pthread_mutex_lock(&j->mu);
		j->c = NULL;
		pthread_mutex_unlock(&j->mu);
	}
}
