/*
 * tests/e2e/fixture_client.c — the end-to-end suite's libgpud-client helpers:
 * connecting (as the test's user or another uid), status and waiting on it,
 * the check that a test left no buffers behind, and one lombscargle run
 * through the library. See e2e.h. Called from the test's own thread.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gpud/npy.h>

#include "tests/e2e/e2e.h"

#include <nng/protocol/reqrep0/req.h>

/* --- libgpud-client helpers ---------------------------------------------------------------- */

/* x, y and freqs as float64 .npy files PREFIXx.npy, PREFIXy.npy, PREFIXf.npy in the test's
 * directory; their paths (700 bytes each) in px, py, pf. */
void save_ls_inputs(const char *prefix, const double *x, const double *y, size_t nx,
		    const double *f, size_t nf, char *px, char *py, char *pf)
{
	char name[64];
	snprintf(name, sizeof(name), "%sx.npy", prefix);
	path_in_dir(px, 700, name);
	snprintf(name, sizeof(name), "%sy.npy", prefix);
	path_in_dir(py, 700, name);
	snprintf(name, sizeof(name), "%sf.npy", prefix);
	path_in_dir(pf, 700, name);
	save_vec(px, GPUD_F64, x, nx);
	save_vec(py, GPUD_F64, y, nx);
	save_vec(pf, GPUD_F64, f, nf);
}

gpud_client *lib_connect(void)
{
	gpud_client *c;
	gpud_status st = gpud_connect(e2e_gpud.url, &c);
	ck_assert_msg(st == GPUD_OK, "gpud_connect(%s): %s: %s", e2e_gpud.url, gpud_strerror(st),
		      gpud_errmsg(c));
	gpud_set_timeout(c, 60000);
	return c;
}

gpud_daemon_status lib_status(gpud_client *c)
{
	gpud_daemon_status s;
	LIB_OK(c, gpud_status_get(c, &s));
	return s;
}

gpud_daemon_status wait_status(gpud_client *c, int (*pred)(const gpud_daemon_status *),
			       double timeout_s)
{
	double deadline = harness_now_s() + timeout_s;
	gpud_daemon_status s;
	for (;;) {
		s = lib_status(c);
		if (pred(&s) || harness_now_s() >= deadline)
			return s;
		harness_sleep_ms(5);
	}
}

static int no_buffers(const gpud_daemon_status *s)
{
	return s->buffers == 0 && s->bytes_in_use == 0;
}

/* Waits (up to timeout_s) until the daemon holds no buffers; returns the last status. */
gpud_daemon_status wait_no_buffers(gpud_client *c, double timeout_s)
{
	return wait_status(c, no_buffers, timeout_s);
}

gpud_client *connect_as_uid(long uid, const char *url)
{
	gpud_client *c;
	if (setgid((gid_t)uid) != 0 || setuid((uid_t)uid) != 0) {
		printf("setuid %ld: %s\n", uid, strerror(errno));
		return NULL;
	}
	if (gpud_connect(url, &c) != GPUD_OK) {
		printf("connect: %s\n", gpud_errmsg(c));
		return NULL;
	}
	return c;
}

/* gpud holds no buffers once the connections of what ran `after` have closed. */
void assert_no_buffers_left(const char *after)
{
	gpud_client *c = lib_connect();
	gpud_daemon_status s = wait_no_buffers(c, E2E_SAFETY_S);
	ck_assert_msg(s.buffers == 0 && s.bytes_in_use == 0,
		      "after %s: %" PRIu64 " buffers, %" PRIu64 " bytes", after, s.buffers,
		      s.bytes_in_use);
	gpud_close(c);
}

/*
 * One lombscargle through the library without asserting (usable from any
 * thread): upload, run (into pgram_buf if non-zero), download into result
 * (nf elements of dt), free what it made.
 */
void ls_lib_run(gpud_client *c, gpud_dtype dt, const double *x, const double *y, size_t nx,
		const double *f, size_t nf, int precenter, int normalize, gpud_handle pgram_buf,
		void *result, ls_result *res)
{
	uint64_t snx = nx, snf = nf;
	gpud_handle h[4] = {0, 0, 0, 0};
	int nh = 0;
	void *bx = to_dtype(x, nx, dt), *by = to_dtype(y, nx, dt), *bf = to_dtype(f, nf, dt);
	const char *step = "alloc x";

	memset(res, 0, sizeof(*res));
	if ((res->st = gpud_alloc(c, dt, 1, &snx, bx, &h[nh])) != GPUD_OK)
		goto out;
	nh++;
	step = "alloc y";
	if ((res->st = gpud_alloc(c, dt, 1, &snx, by, &h[nh])) != GPUD_OK)
		goto out;
	nh++;
	step = "alloc freqs";
	if ((res->st = gpud_alloc(c, dt, 1, &snf, bf, &h[nh])) != GPUD_OK)
		goto out;
	nh++;
	gpud_arg args[6];
	size_t na = 0;
	args[na++] = gpud_arg_buffer("x", h[0]);
	args[na++] = gpud_arg_buffer("y", h[1]);
	args[na++] = gpud_arg_buffer("freqs", h[2]);
	args[na++] = gpud_arg_bool("precenter", precenter);
	args[na++] = gpud_arg_bool("normalize", normalize);
	if (pgram_buf)
		args[na++] = gpud_arg_buffer("pgram", pgram_buf);
	step = "run";
	res->st = gpud_run(c, "lombscargle", args, na, &res->out, 1, &res->nout, &res->info);
	if (res->st != GPUD_OK)
		goto out;
	if (!pgram_buf && res->nout == 1)
		h[nh++] = res->out.handle;
	step = "download";
	if (res->nout == 1)
		res->st = gpud_download_range(c, res->out.handle, 0, result,
					      nf * gpud_dtype_size(dt));
out:
	if (res->st != GPUD_OK)
		snprintf(res->msg, sizeof(res->msg), "%s: %s: %s", step, gpud_strerror(res->st),
			 gpud_errmsg(c));
	if (nh > 0) {
		gpud_status fs = gpud_free(c, h, (size_t)nh);
		if (fs != GPUD_OK && res->st == GPUD_OK) {
			res->st = fs;
			snprintf(res->msg, sizeof(res->msg), "free: %s", gpud_errmsg(c));
		}
	}
	free(bx);
	free(by);
	free(bf);
}
