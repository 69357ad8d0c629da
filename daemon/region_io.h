/*
 * daemon/region_io.h — a file's bytes copied into a host region, or a
 * region's bytes into a file, by gpud for a client (GPUD_SHM_READ,
 * GPUD_SHM_WRITE, proto/shm.h): through gpud's own mapping of the region,
 * whose pages gpud already faulted in (lent or pinned memory), so the
 * client's process never maps them.
 *
 * Threads: region_io_start, the checks and the answer run on the loop
 * (regions are the loop's); the pread/pwrite runs on a libuv worker, the
 * region held by a reference meanwhile. One copy at a time per tenant and
 * REGION_IO_MAX in all (each holds a worker thread, and a file may be slow):
 * the counts are the loop's (region_server.file_io, gpud_tenant.file_io).
 */
#ifndef GPUD_REGION_IO_H
#define GPUD_REGION_IO_H

#include <stdint.h>

#include "daemon/regions.h"
#include "daemon/status.h"
#include "proto/shm.h"

#define REGION_IO_MAX 2

/* The answer, on the loop: ST_OK with the bytes moved, or a status and why. */
typedef void (*region_io_done_fn)(void *arg, dstatus st, uint64_t moved, const char *why);

/*
 * Copies as m says between region r (m->region: one of the connection's,
 * or lent before hello to its process, GPUD_SHM_CLAIM; NULL: none such) of
 * tenant t (NULL: before hello) and the regular file fd (taken: closed here
 * whatever happens). done is called exactly once, at once for a refusal,
 * else when the copy ends.
 */
void region_io_start(region_server *rs, gpud_tenant *t, host_region *r, const shm_file_io *m,
		     int fd, region_io_done_fn done, void *arg);

#endif
