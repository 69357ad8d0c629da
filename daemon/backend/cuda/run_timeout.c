/*
 * daemon/backend/cuda/run_timeout.c — run_timeout for built-in kernels on
 * the cuda backend: the words a kernel reads to stop part-way
 * (cuda_launch_ctx.stop) and the timer that writes them.
 *
 * A kernel on the GPU cannot be interrupted from the host, and a built-in
 * run's launches are all enqueued at once, so the host cannot stop it
 * between launches either: a run of a tenant with a run_timeout takes a
 * zeroed word of a page-locked, device-mapped array (as verdict.c's) and a
 * deadline before its launch. The loop's timer, armed for the earliest
 * deadline, writes 1 into the word of every run past its deadline. A kernel
 * that reads the word (lombscargle's direct kernel, at each chunk of
 * frequencies of each block: every launch of a batch too) returns; the
 * others run to their end. Either way a run whose word was written fails
 * ST_QUOTA when it completes, as on the cpu backend: over run_timeout, its
 * outputs hold no result.
 *
 * A run that finds every word taken (MAX_STOPS runs in flight) runs without
 * a limit; that is logged.
 *
 * Threads: all of it is the loop's. The words are written by the loop and
 * read by the device; a word is given back only after its run's end event
 * (or its drain), when nothing reads it any more.
 */
#include <stdio.h>
#include <stdlib.h>

#include "daemon/backend/cuda/internal.h"
#include "daemon/log.h"
#include "daemon/loop.h"
#include "kernels/core/cuda_check.h"

typedef struct stop_entry {
	const char *kernel;
	uint64_t t0_ns, deadline_ns, timeout_ms;
	int fired;      /* its word was written */
	int prev, next; /* the runs with a word, by index; -1 ends */
} stop_entry;

struct stop_state {
	volatile unsigned *words; /* mapped host words */
	unsigned *words_dev;      /* the same as the device sees them */
	int free_idx[MAX_STOPS];
	int nfree;
	stop_entry e[MAX_STOPS];
	int head;          /* the runs with a word */
	uv_timer_t *timer; /* cuda_backend.stop_timer: for the earliest deadline to come */
	uint64_t due_ns;   /* when it fires; 0: not armed */
	int warned;        /* "every word taken" was logged */
};

int stop_open(cuda_backend *cb, char *err, size_t errlen)
{
	struct stop_state *s = calloc(1, sizeof(*s));
	if (s == NULL) {
		snprintf(err, errlen, "cuda backend: out of memory");
		return -1;
	}
	cudaError_t e = cudaHostAlloc((void **)&s->words, MAX_STOPS * sizeof(unsigned),
				      cudaHostAllocMapped);
	if (e != cudaSuccess) {
		free(s);
		return cuda_fail(e, "cudaHostAlloc (run_timeout words)", err, errlen);
	}
	if ((e = cudaHostGetDevicePointer((void **)&s->words_dev, (void *)s->words, 0)) !=
	    cudaSuccess) {
		cudaFreeHost((void *)s->words);
		free(s);
		return cuda_fail(e, "cudaHostGetDevicePointer (run_timeout words)", err, errlen);
	}
	for (int i = MAX_STOPS - 1; i >= 0; i--)
		s->free_idx[s->nfree++] = i;
	s->head = -1;
	cb->stops = s;
	return 0;
}

void stop_close(cuda_backend *cb, int device_gone)
{
	struct stop_state *s = cb->stops;
	if (s == NULL)
		return;
	if (!device_gone) /* a lost context's memory went with it */
		cudaFreeHost((void *)s->words);
	free(s);
	cb->stops = NULL;
}

static void arm(struct stop_state *s, uint64_t now);

/* Writes the word of every run past its deadline; then waits for the next. */
static void on_timer(uv_timer_t *t)
{
	cuda_backend *cb = t->data;
	struct stop_state *s = cb->stops;
	uint64_t now = uv_hrtime();
	s->due_ns = 0;
	for (int i = s->head; i >= 0; i = s->e[i].next) {
		stop_entry *e = &s->e[i];
		if (e->fired || now < e->deadline_ns)
			continue;
		e->fired = 1;
		__atomic_store_n(&s->words[i], 1u, __ATOMIC_RELEASE);
		log_info("cuda backend: a run of %s is over run_timeout (%g s) after %.1f s: asked "
			 "to stop",
			 e->kernel, (double)e->timeout_ms / 1e3, (double)(now - e->t0_ns) / 1e9);
	}
	arm(s, now);
}

/* The timer for the earliest deadline still to come, if it is not armed
 * for an earlier one already. */
static void arm(struct stop_state *s, uint64_t now)
{
	uint64_t first = 0;
	for (int i = s->head; i >= 0; i = s->e[i].next)
		if (!s->e[i].fired && (first == 0 || s->e[i].deadline_ns < first))
			first = s->e[i].deadline_ns;
	if (first == 0 || (s->due_ns && s->due_ns <= first))
		return;
	uint64_t ms = first > now ? (first - now + 999999) / 1000000 : 0;
	s->due_ns = first;
	uv_timer_start(s->timer, on_timer, ms, 0);
}

void stop_start(cuda_backend *cb, uv_loop_t *loop)
{
	uv_timer_init(loop, &cb->stop_timer);
	cb->stop_timer.data = cb;
	cb->stops->timer = &cb->stop_timer;
}

/* The timer lives in cb (freed by the last handle's close), not in the
 * words' state, which stop_close frees before. */
void stop_close_handle(cuda_backend *cb, uv_close_cb last)
{
	uv_close((uv_handle_t *)&cb->stop_timer, last);
}

int stop_take(cuda_backend *cb, const char *kernel, uint64_t timeout_ms)
{
	ON_LOOP("stop_take");
	struct stop_state *s = cb->stops;
	if (s->nfree == 0) {
		if (!s->warned)
			log_warn(
				"cuda backend: %d runs with a run_timeout are in flight, the most it "
				"watches; later ones run without a limit until some end",
				MAX_STOPS);
		s->warned = 1;
		return -1;
	}
	int i = s->free_idx[--s->nfree];
	uint64_t now = uv_hrtime();
	s->words[i] = 0;
	s->e[i] = (stop_entry){.kernel = kernel,
			       .t0_ns = now,
			       .deadline_ns = now + timeout_ms * 1000000u,
			       .timeout_ms = timeout_ms,
			       .prev = -1,
			       .next = s->head};
	if (s->head >= 0)
		s->e[s->head].prev = i;
	s->head = i;
	arm(s, now);
	return i;
}

const unsigned *stop_word(cuda_backend *cb, int idx)
{
	return cb->stops->words_dev + idx;
}

int stop_put(cuda_backend *cb, int idx, char *msg, size_t msglen)
{
	ON_LOOP("stop_put");
	struct stop_state *s = cb->stops;
	stop_entry *e = &s->e[idx];
	if (e->prev >= 0)
		s->e[e->prev].next = e->next;
	else
		s->head = e->next;
	if (e->next >= 0)
		s->e[e->next].prev = e->prev;
	s->free_idx[s->nfree++] = idx;
	if (s->head < 0) { /* nothing to time: the timer does not hold the loop */
		uv_timer_stop(s->timer);
		s->due_ns = 0;
		s->warned = 0;
	}
	if (!e->fired)
		return 0;
	snprintf(msg, msglen,
		 "run of %s stopped after %.1f s: over run_timeout (%g s); split the work or ask "
		 "the admin",
		 e->kernel, (double)(uv_hrtime() - e->t0_ns) / 1e9, (double)e->timeout_ms / 1e3);
	return 1;
}
