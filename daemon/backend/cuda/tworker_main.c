/*
 * daemon/backend/cuda/tworker_main.c — the tenant worker's program: `gpud
 * --tenant-worker TENANT`, started by gpud (tworkers.c) with the channel as
 * fd 3 (daemon/backend/tenant_worker/msg.h says what goes over it).
 *
 * It makes a CUDA context of its own on gpud's device and runs one tenant's
 * custom kernels there, on memory gpud shares with it allocation by
 * allocation (CUDA IPC): nothing else of gpud's is mapped into it, so a
 * stray pointer in a tenant's kernel faults here instead of reading or
 * writing another tenant's buffers, and a fault ends this context only. A
 * fault ends the process too (the context is unusable after one); gpud
 * starts another.
 *
 * Rights: no capabilities (bounding set emptied where it may be), no new
 * privileges, no file descriptor but stdin/out/err and the channel, the
 * working directory "/", and it dies with gpud (PR_SET_PDEATHSIG). It
 * opens no sockets and no files: code arrives as sealed memfds.
 *
 * One thread: messages are handled in order, a run waits for its kernel
 * (spinning for its first SPIN_NS, then sleeping on a blocking-sync event)
 * before the next message is read.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <cuda_runtime_api.h>
#include <uthash.h>

#include "daemon/backend/cuda/tworker_main.h"
#include "daemon/clock.h"
#include "daemon/backend/tenant_worker/msg.h"

#define CHANNEL_FD 3
#define SPIN_NS 200000ull

typedef struct loaded {
	uint32_t id;
	cudaLibrary_t lib;
	cudaKernel_t fn;
	char why[256]; /* why it did not load ("" when it did) */
	UT_hash_handle hh;
} loaded;

typedef struct mapping {
	uint32_t id;
	void *p;
	char why[256];
	UT_hash_handle hh;
} mapping;

static const char *tenant = "?";
static loaded *kernels;
static mapping *maps;
static cudaEvent_t events[TW_SLOTS];
static cudaStream_t stream;
static cudaEvent_t ev_start, ev_end;

static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...)
{
	char line[600];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	fprintf(stderr, "gpud tenant worker (%s, pid %d): %s\n", tenant, (int)getpid(), line);
}

/* Drops what a kernel host does not need; failures to drop what it never had
 * (an unprivileged gpud has no capabilities) are not errors. */
static int drop_rights(void)
{
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
		return -1;
	if (getppid() == 1)
		return -1; /* gpud is already gone */
	if (syscall(SYS_close_range, CHANNEL_FD + 1, ~0u, 0) != 0)
		for (int fd = CHANNEL_FD + 1; fd < 65536; fd++)
			if (fcntl(fd, F_GETFD) >= 0)
				close(fd);
	for (int cap = 0; cap <= 63; cap++)
		prctl(PR_CAPBSET_DROP, cap, 0, 0, 0);
	struct __user_cap_header_struct h = {.version = _LINUX_CAPABILITY_VERSION_3, .pid = 0};
	struct __user_cap_data_struct d[2];
	memset(d, 0, sizeof(d));
	if (syscall(SYS_capset, &h, d) != 0)
		return -1;
	if (chdir("/") != 0)
		return -1;
	return 0;
}

static int send_msg(const tw_msg *m)
{
	size_t n = tw_msg_size(m->type, 0);
	ssize_t w;
	do
		w = send(CHANNEL_FD, m, n, MSG_NOSIGNAL);
	while (w < 0 && errno == EINTR);
	return w == (ssize_t)n ? 0 : -1;
}

/* One packet, and the fd that came with it (-1: none). 0 at the channel's
 * end, -1 on an error, else its length. */
static ssize_t recv_msg(void *buf, size_t len, int *fd)
{
	char cbuf[CMSG_SPACE(sizeof(int))];
	struct iovec iov = {.iov_base = buf, .iov_len = len};
	struct msghdr mh = {.msg_iov = &iov,
			    .msg_iovlen = 1,
			    .msg_control = cbuf,
			    .msg_controllen = sizeof(cbuf)};
	ssize_t r;
	*fd = -1;
	do
		r = recvmsg(CHANNEL_FD, &mh, MSG_CMSG_CLOEXEC);
	while (r < 0 && errno == EINTR);
	for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); r >= 0 && c; c = CMSG_NXTHDR(&mh, c))
		if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS)
			memcpy(fd, CMSG_DATA(c), sizeof(int));
	if (r >= 0 && (mh.msg_flags & MSG_TRUNC))
		return -1;
	return r;
}

static void load(const tw_msg *m, int fd)
{
	loaded *k;
	HASH_FIND(hh, kernels, &m->id, sizeof(m->id), k);
	if (k == NULL) {
		if ((k = calloc(1, sizeof(*k))) == NULL)
			exit(4);
		k->id = m->id;
		HASH_ADD(hh, kernels, id, sizeof(k->id), k);
	}
	struct stat st;
	void *code = MAP_FAILED;
	cudaError_t e;
	k->why[0] = '\0';
	if (fd < 0 || fstat(fd, &st) != 0 || (uint64_t)st.st_size < m->u.load.code_len ||
	    (code = mmap(NULL, m->u.load.code_len, PROT_READ, MAP_PRIVATE, fd, 0)) == MAP_FAILED) {
		snprintf(k->why, sizeof(k->why), "its code did not arrive (%s)",
			 fd < 0 ? "no file descriptor" : strerror(errno));
	} else if ((e = cudaLibraryLoadData(&k->lib, code, NULL, NULL, 0, NULL, NULL, 0)) !=
		   cudaSuccess) {
		snprintf(k->why, sizeof(k->why), "cudaLibraryLoadData: %s", cudaGetErrorString(e));
		cudaGetLastError();
	} else if ((e = cudaLibraryGetKernel(&k->fn, k->lib, m->u.load.entry)) != cudaSuccess) {
		snprintf(k->why, sizeof(k->why), "no kernel '%s': %s", m->u.load.entry,
			 cudaGetErrorString(e));
		cudaGetLastError();
		cudaLibraryUnload(k->lib);
	}
	if (code != MAP_FAILED)
		munmap(code, m->u.load.code_len);
	if (fd >= 0)
		close(fd);
}

static void unload(const tw_msg *m)
{
	loaded *k;
	HASH_FIND(hh, kernels, &m->id, sizeof(m->id), k);
	if (k == NULL)
		return;
	HASH_DEL(kernels, k);
	if (!k->why[0])
		cudaLibraryUnload(k->lib);
	free(k);
}

static void map(const tw_msg *m)
{
	mapping *p;
	HASH_FIND(hh, maps, &m->id, sizeof(m->id), p);
	if (p != NULL)
		return; /* ids are never reused while mapped */
	if ((p = calloc(1, sizeof(*p))) == NULL)
		exit(4);
	p->id = m->id;
	cudaIpcMemHandle_t h;
	memcpy(&h, m->u.map.handle, sizeof(h));
	cudaError_t e = cudaIpcOpenMemHandle(&p->p, h, cudaIpcMemLazyEnablePeerAccess);
	if (e != cudaSuccess) {
		snprintf(p->why, sizeof(p->why), "cudaIpcOpenMemHandle: %s", cudaGetErrorString(e));
		cudaGetLastError();
		p->p = NULL;
	}
	HASH_ADD(hh, maps, id, sizeof(p->id), p);
}

static int unmap(const tw_msg *m)
{
	mapping *p;
	HASH_FIND(hh, maps, &m->id, sizeof(m->id), p);
	if (p != NULL) {
		HASH_DEL(maps, p);
		if (p->p)
			cudaIpcCloseMemHandle(p->p);
		free(p);
	}
	tw_msg r = {.type = TW_UNMAPPED, .id = m->id};
	return send_msg(&r);
}

/* Runs one kernel and answers. Returns 1 when the context is lost (then the
 * process ends), 0 when it goes on, -1 when the channel is gone. */
static int run(const tw_msg *m)
{
	tw_msg r = {.type = TW_DONE, .id = m->id};
	r.u.done.slot = m->u.run.slot;
	r.u.done.seq = m->u.run.seq;
	uint64_t vals[TW_MAX_ARGS];
	void *args[TW_MAX_ARGS];
	loaded *k;
	int lost = 0;
	cudaError_t e = cudaSuccess;

	HASH_FIND(hh, kernels, &m->id, sizeof(m->id), k);
	if (k == NULL || k->why[0]) {
		r.u.done.cuda_error = cudaErrorInvalidResourceHandle;
		snprintf(r.u.done.text, sizeof(r.u.done.text),
			 "the kernel's code is not loaded%s%s", k ? ": " : "", k ? k->why : "");
		return send_msg(&r);
	}
	for (uint32_t i = 0; i < m->u.run.nargs; i++) {
		const tw_arg *a = &m->u.run.args[i];
		vals[i] = a->value;
		if (a->map) {
			mapping *p;
			HASH_FIND(hh, maps, &a->map, sizeof(a->map), p);
			if (p == NULL || p->p == NULL) {
				r.u.done.cuda_error = cudaErrorInvalidValue;
				snprintf(r.u.done.text, sizeof(r.u.done.text),
					 "argument %u's buffer is not mapped%s%s", i, p ? ": " : "",
					 p ? p->why : "");
				return send_msg(&r);
			}
			vals[i] = (uint64_t)(uintptr_t)p->p + a->value;
		}
		args[i] = &vals[i];
	}
	dim3 g = {m->u.run.grid, 1, 1}, b = {m->u.run.block, 1, 1};
	if ((e = cudaStreamWaitEvent(stream, events[m->u.run.slot], 0)) != cudaSuccess ||
	    (e = cudaEventRecord(ev_start, stream)) != cudaSuccess) {
		lost = 1;
		snprintf(r.u.done.text, sizeof(r.u.done.text), "waiting for the inputs: %s",
			 cudaGetErrorString(e));
	} else if ((e = cudaLaunchKernel((const void *)k->fn, g, b, args, 0, stream)) !=
		   cudaSuccess) {
		/* refused before it ran (shape, resources): the context goes on */
		snprintf(r.u.done.text, sizeof(r.u.done.text), "cudaLaunchKernel: %s (%s)",
			 cudaGetErrorString(e), cudaGetErrorName(e));
		cudaGetLastError();
	} else if ((e = cudaEventRecord(ev_end, stream)) != cudaSuccess) {
		lost = 1;
	} else {
		uint64_t t0 = now_ns();
		while ((e = cudaEventQuery(ev_end)) == cudaErrorNotReady)
			if (now_ns() - t0 > SPIN_NS) {
				e = cudaEventSynchronize(ev_end);
				break;
			}
		if (e == cudaSuccess) {
			float ms = 0;
			cudaEventElapsedTime(&ms, ev_start, ev_end);
			r.u.done.kernel_us = (double)ms * 1e3;
		} else {
			lost = 1;
			snprintf(r.u.done.text, sizeof(r.u.done.text), "%s (%s)",
				 cudaGetErrorString(e), cudaGetErrorName(e));
		}
	}
	r.u.done.cuda_error = (int32_t)e;
	r.u.done.lost = (uint32_t)lost;
	if (lost && !r.u.done.text[0])
		snprintf(r.u.done.text, sizeof(r.u.done.text), "%s (%s)", cudaGetErrorString(e),
			 cudaGetErrorName(e));
	if (send_msg(&r) != 0)
		return -1;
	return lost;
}

static int init(const tw_msg *m)
{
	cudaError_t e;
	uint64_t t0 = now_ns();
	if ((e = cudaSetDevice(m->u.init.device)) != cudaSuccess ||
	    (e = cudaFree(0)) != cudaSuccess) {
		say("no context on device %d: %s", m->u.init.device, cudaGetErrorString(e));
		return -1;
	}
	uint64_t t1 = now_ns();
	for (int i = 0; i < TW_SLOTS; i++) {
		cudaIpcEventHandle_t h;
		memcpy(&h, m->u.init.events[i], sizeof(h));
		if ((e = cudaIpcOpenEventHandle(&events[i], h)) != cudaSuccess) {
			say("cudaIpcOpenEventHandle: %s", cudaGetErrorString(e));
			return -1;
		}
	}
	if ((e = cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking)) != cudaSuccess ||
	    (e = cudaEventCreate(&ev_start)) != cudaSuccess ||
	    (e = cudaEventCreateWithFlags(&ev_end, cudaEventBlockingSync)) != cudaSuccess) {
		say("%s", cudaGetErrorString(e));
		return -1;
	}
	tw_msg r = {.type = TW_READY};
	r.u.ready.pid = (int32_t)getpid();
	r.u.ready.context_ms = (double)(t1 - t0) / 1e6;
	r.u.ready.events_ms = (double)(now_ns() - t1) / 1e6;
	return send_msg(&r);
}

int tworker_main(int argc, char **argv)
{
	static tw_msg m;
	static unsigned char buf[sizeof(tw_msg) + 16];
	char err[256];
	int fd, have_init = 0;

	if (argc >= 3)
		tenant = argv[2];
	struct stat st;
	if (fstat(CHANNEL_FD, &st) != 0 || !S_ISSOCK(st.st_mode)) {
		say("fd %d is not gpud's channel: this program is started by gpud", CHANNEL_FD);
		return 2;
	}
	if (drop_rights() != 0) {
		say("cannot drop its rights: %s", strerror(errno));
		return 2;
	}
	signal(SIGPIPE, SIG_IGN);
	for (;;) {
		ssize_t n = recv_msg(buf, sizeof(buf), &fd);
		if (n == 0)
			return 0; /* gpud closed the channel */
		if (n < 0) {
			say("the channel failed: %s", strerror(errno));
			return 3;
		}
		err[0] = '\0';
		if (tw_msg_decode(buf, (size_t)n, &m, err, sizeof(err)) != 0)
			;
		else if (m.type >= TW_READY)
			snprintf(err, sizeof(err), "%s goes from a worker to gpud",
				 tw_type_name(m.type));
		else if (m.type == TW_INIT && have_init)
			snprintf(err, sizeof(err), "a second INIT");
		else if (m.type != TW_INIT && !have_init)
			snprintf(err, sizeof(err), "%s before INIT", tw_type_name(m.type));
		if (err[0]) {
			say("refused a message from gpud: %s", err);
			return 3;
		}
		if (fd >= 0 && m.type != TW_LOAD)
			close(fd);
		switch (m.type) {
		case TW_INIT:
			if (init(&m) != 0)
				return 3;
			have_init = 1;
			break;
		case TW_LOAD:
			load(&m, fd);
			break;
		case TW_UNLOAD:
			unload(&m);
			break;
		case TW_MAP:
			map(&m);
			break;
		case TW_UNMAP:
			if (unmap(&m) != 0)
				return 0;
			break;
		case TW_RUN:
			switch (run(&m)) {
			case 0:
				break;
			case 1:
				return 1; /* the context is lost: gpud starts another worker */
			default:
				return 0;
			}
			break;
		}
	}
}
