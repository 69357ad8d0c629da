/*
 * daemon/endpoint/ipc.c — ipc://PATH: a Unix socket file on this machine.
 * Local: the kernel tells each connection's user and process (SO_PEERCRED,
 * through nng's options), so its tenant is that user, and hello offers it
 * the region socket (host regions, lent memory, request rings), which
 * goes next to the first ipc:// socket unless shm_socket says otherwise.
 * The socket file takes socket_mode and socket_group; its directory is
 * made if missing, so a first start just works.
 *
 * Threads: endpoint.h's (prepare at start; peer on nng's threads and the
 * loop). No state.
 */
#include <inttypes.h>
#include <stdio.h>
#include <unistd.h>
#include <string.h>
#include <sys/stat.h>

#include "daemon/endpoint/endpoint.h"

#define SCHEME "ipc://"

static const char *ipc_path(const char *url)
{
	return url + strlen(SCHEME);
}

/* The socket's directory, made if missing. */
static void ipc_prepare(const char *url)
{
	char path[4096];
	snprintf(path, sizeof(path), "%s", ipc_path(url));
	char *slash = strrchr(path, '/');
	if (slash == NULL || slash == path)
		return;
	*slash = '\0';
	mkdir(path, 0755); /* an error shows up as the listen failure after it */
}

/* The peer's user (its uid, and the name its tenant takes, looked up here on
 * nng's thread) and process. A peer whose user the kernel does not tell
 * (never on Linux) is not local: its tenant would come by token. gpud's own
 * health probe (its pid) says hello with the probe key, never as a user:
 * no lookup for it. */
static void ipc_peer(nng_pipe p, endpoint_peer *out)
{
	uint64_t uid, pid;
	if (nng_pipe_get_uint64(p, NNG_OPT_IPC_PEER_PID, &pid) == 0)
		out->pid = (int64_t)pid;
	if (nng_pipe_get_uint64(p, NNG_OPT_IPC_PEER_UID, &uid) == 0) {
		out->local = 1;
		out->uid = (int64_t)uid;
		snprintf(out->addr, sizeof(out->addr), "uid %" PRIu64, uid);
		if (out->pid != (int64_t)getpid())
			endpoint_peer_user(out);
	}
}

static const char *const schemes[] = {SCHEME, NULL};

const endpoint_kind endpoint_kind_ipc = {
	.name = "ipc",
	.schemes = schemes,
	.form = "ipc://PATH",
	.local = 1,
	.prepare = ipc_prepare,
	.path = ipc_path,
	.peer = ipc_peer,
};
