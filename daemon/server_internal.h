/*
 * daemon/server_internal.h — what daemon/server.c lends gpud's start-up
 * (daemon/server_start.c) and nobody else: the socket and its events, the
 * contexts, and the hooks the devices and the sessions call back. Their
 * threads are server.c's (server.h): the loop, and nng's for the socket's
 * events.
 */
#ifndef GPUD_SERVER_INTERNAL_H
#define GPUD_SERVER_INTERNAL_H

#include "daemon/server.h"

/*
 * The transport refuses (drops the connection on) a message over this; one a
 * little over max_message_size still arrives and gets a clear TOO_LARGE.
 */
size_t server_request_cap(const gpud_config *cfg);
/* The nng REP socket (no listener yet), its connections' events, and the
 * loop's handles: the event queue's wake-up, signals, shutdown timers.
 * 0, or -1 + err. */
int server_socket_open(gpud_server *s, uv_loop_t *loop, const gpud_config *cfg, char *err,
		       size_t errlen);
/* The contexts, each waiting for a request. 0, or -1 + err. */
int server_contexts_start(gpud_server *s, const gpud_config *cfg, char *err, size_t errlen);
/* The devices' hook: a device is lost (daemon/devices.h). */
void server_on_device_lost(void *owner, gpud_device *d);
/* The sessions' hook: a connection's session closes (daemon/buffers.h). */
void server_on_session_close(void *arg, gpud_session *sess);

#endif
