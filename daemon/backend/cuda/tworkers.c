/*
 * daemon/backend/cuda/tworkers.c — tenant workers, gpud's side: each tenant's
 * custom kernels run in a process of its own (tworker_main.c) with its own
 * CUDA context, on the tenant's buffers shared into it one allocation at a
 * time (cudaIpcGetMemHandle), so a kernel can reach no other tenant's memory
 * and a fault ends that worker's context, not gpud's.
 *
 * A run through a worker, on the loop (tw_run): the run's stream records
 * interprocess event[slot] behind the run's inputs, then waits on a mapped
 * host word (cuStreamWaitValue32: flags[slot] == seq); the worker is sent
 * RUN, waits for event[slot] on its own stream, launches, waits for the
 * kernel and answers DONE; the loop writes the word, and the stream (the
 * session's later work: its downloads) goes on. Every slot's word is written
 * exactly once, whatever happens to the worker (DONE, a fault, the worker's
 * end, kernel_timeout, gpud's close), so gpud's streams never wait for
 * ever; and it is written only when the worker's kernel has ended (DONE
 * after the worker's own wait, or the worker process reaped).
 *
 * Memory: an allocation is mapped into a worker on the first run that names
 * it, and stays mapped while its buffer lives (opening one costs ~0.1 ms).
 * When gpud frees it, the worker is sent UNMAP and the block goes back to
 * the pool only when the worker answered UNMAPPED or ended, so a block
 * another tenant gets next is mapped nowhere else.
 *
 * kernel_timeout: a worker's oldest unanswered run has a timer from when it
 * could start (the worker ready, the run before it answered); when it fires
 * the worker is ended with SIGKILL, which frees the GPU from its kernel.
 *
 * Threads: all of it is the loop's (backend ops, and libuv's process, poll
 * and timer callbacks); tw_close runs at the backend's close.
 */
#include <cuda.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <uthash.h>

#include "daemon/backend/cuda/internal.h"
#include "daemon/backend/tenant_worker/msg.h"
#include "daemon/log.h"
#include "daemon/loop.h"
#include "kernels/core/cuda_check.h"

typedef CUresult (*wait_value_fn)(CUstream, CUdeviceptr, cuuint32_t, unsigned int);
typedef CUresult (*addr_range_fn)(CUdeviceptr *, size_t *, CUdeviceptr);

typedef struct tworker tworker;

/* A packet waiting for room in the channel. */
typedef struct tw_out {
	struct tw_out *next;
	int fd; /* sent with it, then closed; -1: none */
	size_t len;
	unsigned char data[];
} tw_out;

/* A block gpud freed that workers still map: it goes back to the pool when
 * the last of them has unmapped it (or ended). */
typedef struct tw_free {
	void *base;
	int waits;
} tw_free;

/* One of gpud's allocations, mapped into a worker. A block may be mapped in
 * two workers of one tenant at once (one ending, its replacement), never in
 * two tenants'. */
typedef struct tw_map {
	void *base;
	uint32_t id;
	tworker *w;
	tw_free *freeing;  /* gpud freed it: the worker is unmapping it */
	UT_hash_handle hh; /* tworker.by_base */
	UT_hash_handle hw; /* tworker.maps, by id */
} tw_map;

typedef struct tw_loaded {
	uint32_t id;
	UT_hash_handle hh;
} tw_loaded;

/* A run in a worker, from tw_run to its job's completion. */
typedef struct tw_slot {
	tworker *w; /* NULL: free */
	uint64_t seq;
	uint64_t timeout_ms;
	uint64_t start_ns; /* when it could start running; 0: not yet */
	char kernel[CUSTOM_NAME_MAX];
	int answered;
	dstatus status;
	double kernel_us;
	char msg[768];
	struct tw_slot *next; /* the worker's unanswered runs, oldest first */
} tw_slot;

struct tworker {
	char tenant[GPUD_TENANT_NAME];
	struct tw_state *s;
	uv_process_t proc;
	uv_poll_t poll;
	uv_timer_t timer;
	int fd;
	int handles; /* open libuv handles: freed when the last one closed */
	int ready, exited, in_table, polling;
	int retiring; /* it said its context is lost and ends */
	unsigned poll_events;
	uint64_t spawned_ns;
	char why[400]; /* why gpud ended it ("": it ended by itself) */
	tw_slot *head, *tail;
	tw_map *maps, *by_base;
	tw_loaded *loaded;
	tw_out *out, *out_tail;
	UT_hash_handle hh;           /* tw_state.workers, by tenant */
	struct tworker *prev, *next; /* tw_state.live */
};

struct tw_state {
	gpud_backend *b;
	char exe[4096];
	cudaEvent_t events[TW_SLOTS];
	unsigned char handles[TW_SLOTS][TW_HANDLE_BYTES];
	int nevents;
	volatile uint32_t *flags;
	CUdeviceptr flags_dev;
	wait_value_fn wait_value;
	addr_range_fn addr_range;
	tw_slot slots[TW_SLOTS];
	uint64_t seq;
	uint32_t next_map;
	tworker *workers; /* the worker each tenant's runs go to, by tenant */
	tworker *live;    /* every worker whose process gpud has not seen end */
	int free_slots[TW_SLOTS], nfree_slots;
};

static uint64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* --- the channel ---------------------------------------------------------------------------- */

static void on_io(uv_poll_t *p, int status, int events);

static void want_events(tworker *w)
{
	unsigned ev = UV_READABLE | (w->out ? UV_WRITABLE : 0);
	if (w->exited || w->fd < 0 || (w->polling && ev == w->poll_events))
		return;
	uv_poll_start(&w->poll, (int)ev, on_io);
	w->polling = 1;
	w->poll_events = ev;
}

/* 0 sent, 1 no room (try later), -1 the channel is gone. */
static int send_now(tworker *w, const void *data, size_t len, int fd)
{
	char cbuf[CMSG_SPACE(sizeof(int))];
	struct iovec iov = {.iov_base = (void *)data, .iov_len = len};
	struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};
	if (fd >= 0) {
		memset(cbuf, 0, sizeof(cbuf));
		mh.msg_control = cbuf;
		mh.msg_controllen = sizeof(cbuf);
		struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(c), &fd, sizeof(int));
	}
	ssize_t n;
	do
		n = sendmsg(w->fd, &mh, MSG_DONTWAIT | MSG_NOSIGNAL);
	while (n < 0 && errno == EINTR);
	if (n == (ssize_t)len)
		return 0;
	return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == ENOBUFS) ? 1 : -1;
}

static void flush_out(tworker *w)
{
	while (w->out) {
		tw_out *o = w->out;
		int r = send_now(w, o->data, o->len, o->fd);
		if (r == 1)
			break;
		/* sent, or the worker is gone (its end is handled by on_worker_exit) */
		w->out = o->next;
		if (w->out == NULL)
			w->out_tail = NULL;
		if (o->fd >= 0)
			close(o->fd);
		free(o);
	}
	want_events(w);
}

/* Sends m (and fd, which it then owns) in order behind what waits. A worker
 * gone meanwhile is not an error here: its end answers its runs. */
static void send_msg(tworker *w, const tw_msg *m, int fd)
{
	size_t len = tw_msg_size(m->type, m->type == TW_RUN ? m->u.run.nargs : 0);
	if (w->exited || w->fd < 0) {
		if (fd >= 0)
			close(fd);
		return;
	}
	if (w->out == NULL) {
		int r = send_now(w, m, len, fd);
		if (r != 1) {
			if (fd >= 0)
				close(fd);
			return;
		}
	}
	tw_out *o = malloc(sizeof(*o) + len);
	if (o == NULL) {
		log_error("tenant worker of '%s': out of memory queueing %s; ending it", w->tenant,
			  tw_type_name(m->type));
		if (fd >= 0)
			close(fd);
		uv_process_kill(&w->proc, SIGKILL);
		return;
	}
	o->next = NULL;
	o->fd = fd;
	o->len = len;
	memcpy(o->data, m, len);
	if (w->out_tail)
		w->out_tail->next = o;
	else
		w->out = o;
	w->out_tail = o;
	want_events(w);
}

/* --- runs' answers ----------------------------------------------------------------------------- */

static void on_timeout(uv_timer_t *t);

static void arm_timer(tworker *w)
{
	tw_slot *h = w->head;
	if (w->exited)
		return;
	uv_timer_stop(&w->timer);
	if (h == NULL || h->timeout_ms == 0 || h->start_ns == 0)
		return;
	uint64_t now = mono_ns(), end = h->start_ns + h->timeout_ms * 1000000ull;
	uv_timer_start(&w->timer, on_timeout, end > now ? (end - now + 999999) / 1000000 : 0, 0);
}

/* The slot's outcome; writes its word, so its stream goes on. */
static void answer(struct tw_state *s, tw_slot *sl, dstatus status, double kernel_us,
		   const char *msg)
{
	if (sl->answered)
		return;
	sl->answered = 1;
	sl->status = status;
	sl->kernel_us = kernel_us;
	snprintf(sl->msg, sizeof(sl->msg), "%s", msg ? msg : "");
	__atomic_store_n(&s->flags[sl - s->slots], (uint32_t)sl->seq, __ATOMIC_RELEASE);
}

/* Takes sl, which must be w's oldest run, off w's list. */
static void pop_head(tworker *w)
{
	tw_slot *h = w->head;
	w->head = h->next;
	if (w->head == NULL)
		w->tail = NULL;
	h->next = NULL;
	h->w = NULL;
	if (w->head && w->ready)
		w->head->start_ns = mono_ns();
	arm_timer(w);
}

static void kill_worker(tworker *w, const char *why)
{
	if (w->exited)
		return;
	if (why && !w->why[0])
		snprintf(w->why, sizeof(w->why), "%s", why);
	if (w->in_table) { /* the tenant's next run starts a fresh worker */
		HASH_DEL(w->s->workers, w);
		w->in_table = 0;
	}
	uv_process_kill(&w->proc, SIGKILL);
}

static void on_timeout(uv_timer_t *t)
{
	tworker *w = t->data;
	cuda_use(w->s->b->impl);
	tw_slot *h = w->head;
	char why[400];
	if (h == NULL || w->exited)
		return;
	snprintf(why, sizeof(why),
		 "custom kernel '%s' ran longer than kernel_timeout (%.3g s) and was stopped by "
		 "ending its tenant worker",
		 h->kernel, (double)h->timeout_ms / 1e3);
	log_warn("tenant '%s': %s (pid %d)", w->tenant, why, w->proc.pid);
	kill_worker(w, why);
}

static void on_done(tworker *w, const tw_msg *m)
{
	struct tw_state *s = w->s;
	tw_slot *sl = &s->slots[m->u.done.slot];
	char msg[768];
	if (sl != w->head || sl->seq != m->u.done.seq) {
		log_error("tenant worker of '%s' answered slot %u seq %" PRIu64
			  ", not its oldest run; ending it",
			  w->tenant, m->u.done.slot, m->u.done.seq);
		kill_worker(w, "it answered a run out of order");
		return;
	}
	if (m->u.done.cuda_error == 0) {
		answer(s, sl, ST_OK, m->u.done.kernel_us, NULL);
	} else {
		snprintf(msg, sizeof(msg), "custom kernel '%s' failed: %s%s", sl->kernel,
			 m->u.done.text,
			 m->u.done.lost ? "; its tenant worker (the process the tenant's custom "
					  "kernels run in) was replaced, gpud and the tenant's "
					  "buffers are intact"
					: "");
		answer(s, sl, ST_BACKEND, 0, msg);
	}
	if (m->u.done.lost && w->in_table) {
		/* It ends now: the tenant's next run goes to a fresh worker. */
		HASH_DEL(s->workers, w);
		w->in_table = 0;
		w->retiring = 1;
	}
	pop_head(w);
}

/* m leaves w's tables; a freed block whose last mapping this was goes back. */
static void map_drop(tworker *w, tw_map *m)
{
	HASH_DELETE(hw, w->maps, m);
	HASH_DELETE(hh, w->by_base, m);
	if (m->freeing && --m->freeing->waits == 0) {
		cuda_free_block(w->s->b, m->base);
		free(m->freeing);
	}
	free(m);
}

static void on_unmapped(tworker *w, uint32_t id)
{
	tw_map *m;
	HASH_FIND(hw, w->maps, &id, sizeof(id), m);
	if (m == NULL)
		return;
	map_drop(w, m);
}

static void read_all(tworker *w)
{
	static unsigned char buf[sizeof(tw_msg) + 16];
	tw_msg m;
	char err[256];
	while (w->fd >= 0) {
		ssize_t n = recv(w->fd, buf, sizeof(buf), MSG_DONTWAIT | MSG_TRUNC);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return; /* EAGAIN; or an error, whose end on_worker_exit sees */
		if (n == 0) {
			if (w->polling)
				uv_poll_stop(&w->poll);
			w->polling = 0;
			return;
		}
		if (tw_msg_decode(buf, (size_t)n, &m, err, sizeof(err)) != 0 ||
		    (m.type < TW_READY &&
		     snprintf(err, sizeof(err), "%s goes from gpud to a worker",
			      tw_type_name(m.type)))) {
			log_error("tenant worker of '%s' sent a bad message (%s); ending it",
				  w->tenant, err);
			kill_worker(w, "it sent a bad message");
			return;
		}
		switch (m.type) {
		case TW_READY:
			if (!w->ready) {
				w->ready = 1;
				log_info("tenant worker of '%s' ready: pid %d, started in %.1f ms "
					 "(its context %.1f ms, opening events %.1f ms)",
					 w->tenant, m.u.ready.pid,
					 (double)(mono_ns() - w->spawned_ns) / 1e6,
					 m.u.ready.context_ms, m.u.ready.events_ms);
				if (w->head) {
					w->head->start_ns = mono_ns();
					arm_timer(w);
				}
			}
			break;
		case TW_DONE:
			on_done(w, &m);
			break;
		case TW_UNMAPPED:
			on_unmapped(w, m.id);
			break;
		}
	}
}

static void on_io(uv_poll_t *p, int status, int events)
{
	tworker *w = p->data;
	cuda_use(w->s->b->impl);
	if (status < 0) {
		if (w->polling)
			uv_poll_stop(&w->poll);
		w->polling = 0;
		return;
	}
	if (events & UV_WRITABLE)
		flush_out(w);
	if (events & UV_READABLE)
		read_all(w);
}

/* --- a worker's life ------------------------------------------------------------------------- */

static void handle_closed(uv_handle_t *h)
{
	tworker *w = h->data;
	if (--w->handles == 0) {
		if (w->fd >= 0)
			close(w->fd);
		free(w);
	}
}

/* Everything of w's that gpud holds goes: its runs are answered, its
 * mappings' blocks go back to the pool (its process has ended: nothing is
 * mapped any more), its handles close. */
static void worker_gone(tworker *w, const char *how)
{
	struct tw_state *s = w->s;
	char msg[768];
	w->exited = 1;
	if (w->in_table) {
		HASH_DEL(s->workers, w);
		w->in_table = 0;
	}
	if (w->prev)
		w->prev->next = w->next;
	else
		s->live = w->next;
	if (w->next)
		w->next->prev = w->prev;
	w->prev = w->next = NULL;
	int first = 1;
	while (w->head) {
		tw_slot *h = w->head;
		if (first && w->why[0])
			snprintf(msg, sizeof(msg), "%s", w->why);
		else if (first)
			snprintf(msg, sizeof(msg),
				 "custom kernel '%s' did not finish: its tenant worker ended (%s); "
				 "gpud and the tenant's buffers are intact",
				 h->kernel, how);
		else
			snprintf(
				msg, sizeof(msg),
				"custom kernel '%s' did not run: its tenant worker ended before it "
				"(%s)",
				h->kernel, w->why[0] ? w->why : how);
		answer(s, h, ST_BACKEND, 0, msg);
		w->head = h->next;
		h->next = NULL;
		h->w = NULL;
		first = 0;
	}
	w->tail = NULL;
	tw_map *m, *tmp;
	HASH_ITER(hw, w->maps, m, tmp)
	map_drop(w, m);
	tw_loaded *l, *ltmp;
	HASH_ITER(hh, w->loaded, l, ltmp)
	{
		HASH_DEL(w->loaded, l);
		free(l);
	}
	while (w->out) {
		tw_out *o = w->out;
		w->out = o->next;
		if (o->fd >= 0)
			close(o->fd);
		free(o);
	}
	w->out_tail = NULL;
	uv_timer_stop(&w->timer);
	if (w->polling)
		uv_poll_stop(&w->poll);
	w->polling = 0;
	uv_close((uv_handle_t *)&w->poll, handle_closed);
	uv_close((uv_handle_t *)&w->timer, handle_closed);
	uv_close((uv_handle_t *)&w->proc, handle_closed);
}

static tworker *tw_spawn(struct tw_state *s, const char *tenant, char *err, size_t errlen);

static void on_worker_exit(uv_process_t *p, int64_t exit_status, int term_signal)
{
	tworker *w = p->data;
	struct tw_state *s = w->s;
	cuda_use(w->s->b->impl);
	char how[128], tenant[GPUD_TENANT_NAME], err[256];
	read_all(w); /* what it answered before it ended comes first */
	if (term_signal)
		snprintf(how, sizeof(how), "pid %d, signal %d (%s)", p->pid, term_signal,
			 strsignal(term_signal));
	else
		snprintf(how, sizeof(how), "pid %d, exit status %" PRId64, p->pid, exit_status);
	int abnormal = w->why[0] || exit_status != 0 || term_signal;
	if (abnormal)
		log_warn("tenant worker of '%s' ended (%s)%s%s", w->tenant, how,
			 w->why[0] ? ": " : "", w->why);
	int replace = w->ready && (abnormal || w->retiring);
	snprintf(tenant, sizeof(tenant), "%s", w->tenant);
	worker_gone(w, how);
	/* One that served and was ended (a fault, a timeout, a kill) is replaced
	 * now, so the tenant's next run does not wait for a context. */
	tworker *again;
	HASH_FIND_STR(s->workers, tenant, again);
	if (replace && again == NULL && tw_spawn(s, tenant, err, sizeof(err)) == NULL)
		log_warn("tenant worker of '%s' not replaced: %s", tenant, err);
}

static tworker *tw_spawn(struct tw_state *s, const char *tenant, char *err, size_t errlen)
{
	uv_loop_t *loop = s->b->loop;
	int sv[2];
	tworker *w = calloc(1, sizeof(*w));
	if (w == NULL) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	snprintf(w->tenant, sizeof(w->tenant), "%s", tenant);
	w->s = s;
	w->fd = -1;
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0) {
		snprintf(err, errlen, "socketpair: %s", strerror(errno));
		free(w);
		return NULL;
	}
	int sz = 1 << 20;
	setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &sz, sizeof(sz));
	fcntl(sv[0], F_SETFL, fcntl(sv[0], F_GETFL) | O_NONBLOCK);
	char *args[] = {s->exe, (char *)"--tenant-worker", w->tenant, NULL};
	uv_stdio_container_t io[4] = {
		{.flags = UV_IGNORE},
		{.flags = UV_INHERIT_FD, .data.fd = 1},
		{.flags = UV_INHERIT_FD, .data.fd = 2},
		{.flags = UV_INHERIT_FD, .data.fd = sv[1]},
	};
	uv_process_options_t o = {.exit_cb = on_worker_exit,
				  .file = s->exe,
				  .args = args,
				  .stdio = io,
				  .stdio_count = 4};
	w->spawned_ns = mono_ns();
	int rv = uv_spawn(loop, &w->proc, &o);
	close(sv[1]);
	w->proc.data = w;
	w->handles = 1;
	if (rv != 0) {
		snprintf(err, errlen, "cannot start %s --tenant-worker: %s", s->exe,
			 uv_strerror(rv));
		close(sv[0]);
		w->exited = 1;
		uv_close((uv_handle_t *)&w->proc, handle_closed);
		return NULL;
	}
	w->fd = sv[0];
	uv_poll_init(loop, &w->poll, w->fd);
	w->poll.data = w;
	uv_timer_init(loop, &w->timer);
	w->timer.data = w;
	w->handles = 3;
	HASH_ADD_STR(s->workers, tenant, w);
	w->in_table = 1;
	w->next = s->live;
	if (s->live)
		s->live->prev = w;
	s->live = w;
	tw_msg m = {.type = TW_INIT};
	m.u.init.device = ((cuda_backend *)s->b->impl)->device;
	m.u.init.nevents = TW_SLOTS;
	memcpy(m.u.init.events, s->handles, sizeof(s->handles));
	send_msg(w, &m, -1);
	want_events(w);
	log_info("tenant worker of '%s' starting: pid %d", tenant, w->proc.pid);
	return w;
}

static tworker *tw_get(struct tw_state *s, const char *tenant, char *err, size_t errlen)
{
	tworker *w;
	HASH_FIND_STR(s->workers, tenant, w);
	return w ? w : tw_spawn(s, tenant, err, errlen);
}

/* --- open and close ---------------------------------------------------------------------------- */

/* A driver API function (CUDA 12 ABI) through the runtime, or NULL with why. */
static void *driver_fn(const char *name, char *why, size_t whylen)
{
	enum cudaDriverEntryPointQueryResult q;
	void *fn = NULL;
	cudaError_t e = cudaGetDriverEntryPointByVersion(name, &fn, 12000, cudaEnableDefault, &q);
	if (e != cudaSuccess || q != cudaDriverEntryPointSuccess || fn == NULL) {
		snprintf(why, whylen, "the driver has no %s (%s)", name, cudaGetErrorString(e));
		return NULL;
	}
	return fn;
}

int tw_open(gpud_backend *b, const gpud_config *cfg, char *why, size_t whylen)
{
	cuda_backend *cb = b->impl;
	struct tw_state *s;
	cudaError_t e;
	cb->tw = NULL;
	if (!cfg->kernel_workers) {
		snprintf(why, whylen, "kernel_workers = off");
		return -1;
	}
	if ((s = calloc(1, sizeof(*s))) == NULL) {
		snprintf(why, whylen, "out of memory");
		return -1;
	}
	s->b = b;
	ssize_t n = readlink("/proc/self/exe", s->exe, sizeof(s->exe) - 1);
	if (n <= 0) {
		snprintf(why, whylen, "/proc/self/exe: %s", strerror(errno));
		goto fail;
	}
	s->exe[n] = '\0';
	if ((s->wait_value = (wait_value_fn)driver_fn("cuStreamWaitValue32", why, whylen)) ==
		    NULL ||
	    (s->addr_range = (addr_range_fn)driver_fn("cuMemGetAddressRange", why, whylen)) == NULL)
		goto fail;
	void *dev = NULL;
	if ((e = cudaHostAlloc((void **)&s->flags, TW_SLOTS * sizeof(uint32_t),
			       cudaHostAllocMapped)) != cudaSuccess ||
	    (e = cudaHostGetDevicePointer(&dev, (void *)s->flags, 0)) != cudaSuccess) {
		snprintf(why, whylen, "mapped host words: %s", cudaGetErrorString(e));
		cudaGetLastError();
		goto fail;
	}
	memset((void *)s->flags, 0, TW_SLOTS * sizeof(uint32_t));
	s->flags_dev = (CUdeviceptr)(uintptr_t)dev;
	for (; s->nevents < TW_SLOTS; s->nevents++) {
		cudaIpcEventHandle_t h;
		if ((e = cudaEventCreateWithFlags(&s->events[s->nevents],
						  cudaEventInterprocess |
							  cudaEventDisableTiming)) != cudaSuccess ||
		    (e = cudaIpcGetEventHandle(&h, s->events[s->nevents])) != cudaSuccess) {
			snprintf(why, whylen, "interprocess events: %s", cudaGetErrorString(e));
			cudaGetLastError();
			goto fail;
		}
		memcpy(s->handles[s->nevents], &h, TW_HANDLE_BYTES);
	}
	/* The stream wait a run through a worker depends on, tried once. */
	CUresult r = s->wait_value((CUstream)cb->streams[0], s->flags_dev, 0,
				   CU_STREAM_WAIT_VALUE_EQ);
	if (r != CUDA_SUCCESS || (e = cudaStreamSynchronize(cb->streams[0])) != cudaSuccess) {
		snprintf(why, whylen, "cuStreamWaitValue32 on mapped host memory fails (%d, %s)",
			 (int)r, cudaGetErrorString(e));
		cudaGetLastError();
		goto fail;
	}
	for (int i = TW_SLOTS - 1; i >= 0; i--)
		s->free_slots[s->nfree_slots++] = i;
	s->seq = 1;
	s->next_map = 1;
	cb->tw = s;
	return 0;
fail:
	for (int i = 0; i < s->nevents; i++)
		cudaEventDestroy(s->events[i]);
	if (s->flags)
		cudaFreeHost((void *)s->flags);
	free(s);
	return -1;
}

void tw_close(cuda_backend *cb)
{
	struct tw_state *s = cb->tw;
	if (s == NULL)
		return;
	/* Each worker is ended and reaped before its memory goes back, so none
	 * of its kernels runs while the pool closes. */
	while (s->live) {
		tworker *w = s->live;
		int st;
		snprintf(w->why, sizeof(w->why), "gpud is stopping");
		uv_process_kill(&w->proc, SIGKILL);
		while (waitpid(w->proc.pid, &st, 0) < 0 && errno == EINTR)
			;
		worker_gone(w, "gpud is stopping");
	}
	if (!atomic_load(&cb->lost)) {
		for (int i = 0; i < s->nevents; i++)
			cudaEventDestroy(s->events[i]);
		cudaFreeHost((void *)s->flags);
	}
	cb->tw = NULL;
	free(s); /* the workers' handles still closing do not touch it */
}

/* --- runs ------------------------------------------------------------------------------------ */

/* The map id of the allocation holding p in w (mapping it first), and p's
 * offset in it. 0, or -1 with err. */
static int map_of(tworker *w, void *p, uint32_t *id, uint64_t *off, char *err, size_t errlen)
{
	struct tw_state *s = w->s;
	tw_map *m;
	void *base = p;
	HASH_FIND_PTR(w->by_base, &base, m);
	if (m == NULL) { /* not a block mapped here yet: find the allocation p is in */
		CUdeviceptr b = 0;
		size_t size = 0;
		if (s->addr_range(&b, &size, (CUdeviceptr)(uintptr_t)p) != CUDA_SUCCESS) {
			snprintf(err, errlen, "%p is not device memory of gpud's", p);
			return -1;
		}
		base = (void *)(uintptr_t)b;
		HASH_FIND_PTR(w->by_base, &base, m);
		for (tworker *o = s->live; m == NULL && o; o = o->next) {
			tw_map *om;
			HASH_FIND_PTR(o->by_base, &base, om);
			if (om && (strcmp(o->tenant, w->tenant) != 0 || om->freeing)) {
				snprintf(err, errlen,
					 "the allocation at %p is %s (tenant worker of '%s'): "
					 "refusing to share it",
					 base,
					 om->freeing ? "being freed" : "mapped by another tenant",
					 o->tenant);
				return -1;
			}
		}
	}
	if (m != NULL && m->freeing) {
		snprintf(err, errlen, "the allocation at %p is being freed", base);
		return -1;
	}
	if (m == NULL) {
		cudaIpcMemHandle_t h;
		cudaError_t e = cudaIpcGetMemHandle(&h, base);
		if (e != cudaSuccess) {
			cudaGetLastError();
			snprintf(err, errlen, "cudaIpcGetMemHandle(%p): %s", base,
				 cudaGetErrorString(e));
			return -1;
		}
		if ((m = calloc(1, sizeof(*m))) == NULL) {
			snprintf(err, errlen, "out of memory");
			return -1;
		}
		m->base = base;
		m->w = w;
		m->id = s->next_map++;
		if (s->next_map == 0)
			s->next_map = 1;
		HASH_ADD_PTR(w->by_base, base, m);
		HASH_ADD(hw, w->maps, id, sizeof(m->id), m);
		tw_msg mm = {.type = TW_MAP, .id = m->id};
		memcpy(mm.u.map.handle, &h, TW_HANDLE_BYTES);
		send_msg(w, &mm, -1);
	}
	*id = m->id;
	*off = (uint64_t)((char *)p - (char *)base);
	return 0;
}

/* k's code is loaded in w (sent first where it is not). 0, or -1 with err. */
static int ensure_loaded(tworker *w, const custom_kernel *k, char *err, size_t errlen)
{
	tw_loaded *l;
	HASH_FIND(hh, w->loaded, &k->code_id, sizeof(k->code_id), l);
	if (l != NULL)
		return 0;
	int fd = k->code_len ? fcntl(k->code_fd, F_DUPFD_CLOEXEC, 0) : -1;
	if (fd < 0 || (l = calloc(1, sizeof(*l))) == NULL) {
		snprintf(err, errlen, "custom kernel '%s': its code cannot be handed over (%s)",
			 k->name, k->code_len ? strerror(errno) : "none kept");
		if (fd >= 0)
			close(fd);
		return -1;
	}
	l->id = k->code_id;
	HASH_ADD(hh, w->loaded, id, sizeof(l->id), l);
	tw_msg m = {.type = TW_LOAD, .id = k->code_id};
	snprintf(m.u.load.entry, sizeof(m.u.load.entry), "%s", k->entry);
	m.u.load.code_len = k->code_len;
	send_msg(w, &m, fd);
	return 0;
}

dstatus tw_run(gpud_backend *b, cuda_job *j, const custom_kernel *k, const custom_plan *plan,
	       const backend_tenant *t, char *err, size_t errlen)
{
	cuda_backend *cb = b->impl;
	struct tw_state *s = cb->tw;
	const char *tenant = t && t->name ? t->name : "";
	tw_msg m = {.type = TW_RUN, .id = k->code_id};
	tworker *w = tw_get(s, tenant, err, errlen);
	if (w == NULL)
		return ST_BACKEND;
	if (s->nfree_slots == 0) {
		snprintf(err, errlen,
			 "%d runs of custom kernels are in flight, the most gpud keeps; try again "
			 "when some have finished",
			 TW_SLOTS);
		return ST_BACKEND;
	}
	if (ensure_loaded(w, k, err, errlen) != 0)
		return ST_BACKEND;
	m.u.run.nargs = (uint32_t)plan->nargs;
	m.u.run.grid = plan->grid;
	m.u.run.block = plan->block;
	for (int i = 0; i < plan->nargs; i++) {
		m.u.run.args[i].value = plan->vals[i];
		if (plan->is_ptr[i] &&
		    map_of(w, (void *)(uintptr_t)plan->vals[i], &m.u.run.args[i].map,
			   &m.u.run.args[i].value, err, errlen) != 0)
			return ST_BACKEND;
	}
	int idx = s->free_slots[--s->nfree_slots];
	tw_slot *sl = &s->slots[idx];
	if ((uint32_t)++s->seq == 0)
		s->seq++;
	*sl = (tw_slot){.seq = s->seq, .timeout_ms = t ? t->kernel_timeout_ms : 0};
	snprintf(sl->kernel, sizeof(sl->kernel), "%s", k->name);
	j->tw_slot = idx;
	cudaError_t e = cudaEventRecord(s->events[idx], j->stream);
	CUresult r = CUDA_SUCCESS;
	if (e != cudaSuccess ||
	    (r = s->wait_value((CUstream)j->stream, s->flags_dev + (CUdeviceptr)idx * 4,
			       (cuuint32_t)sl->seq, CU_STREAM_WAIT_VALUE_EQ)) != CUDA_SUCCESS) {
		/* the wait may be enqueued: the word must be written */
		snprintf(err, errlen, "enqueueing a run of custom kernel '%s': %s", k->name,
			 e != cudaSuccess ? cudaGetErrorString(e) : "cuStreamWaitValue32 failed");
		answer(s, sl, ST_BACKEND, 0, err);
		return e != cudaSuccess ? cuda_note_error(cb, e, err) : ST_BACKEND;
	}
	m.u.run.slot = (uint32_t)idx;
	m.u.run.seq = sl->seq;
	sl->w = w;
	if (w->tail)
		w->tail->next = sl;
	else
		w->head = sl;
	w->tail = sl;
	if (w->head == sl && w->ready) {
		sl->start_ns = mono_ns();
		arm_timer(w);
	}
	send_msg(w, &m, -1);
	return ST_OK;
}

void tw_job_result(cuda_backend *cb, cuda_job *j, dstatus *status, const char **msg, char *buf,
		   size_t buflen)
{
	struct tw_state *s = cb->tw;
	int idx = j->tw_slot;
	j->tw_slot = -1;
	if (s == NULL || idx < 0)
		return;
	tw_slot *sl = &s->slots[idx];
	if (sl->answered && *status == ST_OK) {
		*status = sl->status;
		if (sl->status == ST_OK)
			*j->kernel_us = sl->kernel_us;
		snprintf(buf, buflen, "%s", sl->msg);
		*msg = buf;
	}
	if (sl->w == NULL) /* answered, or never sent: the slot is free again */
		s->free_slots[s->nfree_slots++] = idx;
}

int tw_free_waits(cuda_backend *cb, void *mem)
{
	struct tw_state *s = cb->tw;
	tw_free *f = NULL;
	if (s == NULL)
		return 0;
	for (tworker *w = s->live; w; w = w->next) {
		tw_map *m;
		HASH_FIND_PTR(w->by_base, &mem, m);
		if (m == NULL || m->freeing)
			continue;
		if (f == NULL && (f = calloc(1, sizeof(*f))) == NULL) {
			/* cannot track it: end the worker, whose end gives the block back */
			kill_worker(w, "gpud ran out of memory unmapping a block");
			continue;
		}
		f->base = mem;
		f->waits++;
		m->freeing = f;
		tw_msg u = {.type = TW_UNMAP, .id = m->id};
		send_msg(w, &u, -1);
	}
	return f != NULL;
}

void tw_prepare(gpud_backend *b, const char *tenant)
{
	cuda_backend *cb = b->impl;
	char err[256];
	if (cb == NULL || cb->tw == NULL || atomic_load(&cb->lost))
		return;
	if (tw_get(cb->tw, tenant, err, sizeof(err)) == NULL)
		log_warn("tenant worker of '%s' not started: %s", tenant, err);
}

void tw_release_kernel(cuda_backend *cb, const custom_kernel *k)
{
	struct tw_state *s = cb->tw;
	if (s == NULL)
		return;
	for (tworker *w = s->live; w; w = w->next) {
		tw_loaded *l;
		HASH_FIND(hh, w->loaded, &k->code_id, sizeof(k->code_id), l);
		if (l == NULL)
			continue;
		HASH_DEL(w->loaded, l);
		free(l);
		tw_msg m = {.type = TW_UNLOAD, .id = k->code_id};
		send_msg(w, &m, -1);
	}
}
