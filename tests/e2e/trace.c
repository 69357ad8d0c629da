/*
 * tests/e2e/trace.c — test case "trace": gpud's NVTX ranges (daemon/trace.h),
 * seen by a tool. gpud starts with NVTX_INJECTION64_PATH naming the recorder
 * tests/nvtx/inject.c (built next to this program, tests/libnvtx-record.so),
 * which writes every range start and end to a file; a known sequence of
 * requests must give one range each in the "gpud" domain, with the right
 * tenant, verb, kernel, bytes and connection, every start with its end.
 *
 * Built without the CUDA Toolkit's NVTX headers (no GPUD_HAVE_NVTX), gpud
 * has no ranges to see and the case is left out, saying so; CI has the
 * toolkit, so there it runs and fails on a regression.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/e2e/e2e.h"

#if GPUD_HAVE_NVTX

#define MAX_RANGES 256

typedef struct range {
	char domain[32];
	unsigned long long id;
	unsigned category;
	char payload[32];
	char msg[512];
	int ends;
} range;

/* The value of "key=" in a range's message, into out ("" if absent). */
static void field(const char *msg, const char *key, char *out, size_t len)
{
	char k[32];
	size_t kn = (size_t)snprintf(k, sizeof(k), "%s=", key);
	out[0] = '\0';
	for (const char *p = msg; (p = strstr(p, k)) != NULL; p += kn) {
		if (p != msg && p[-1] != ' ')
			continue;
		size_t n = strcspn(p + kn, " ");
		snprintf(out, len, "%.*s", (int)n, p + kn);
		return;
	}
}

/* The record file's ranges (starts, with their ends counted); asserts its shape. */
static int read_ranges(const char *path, range *rs, int max, int *domains, int *named)
{
	static char text[1 << 20];
	int n = 0;
	ck_assert_msg(harness_read_text(path, text, sizeof(text)) > 0,
		      "the NVTX recorder wrote nothing to %s: gpud did not load it, or made no "
		      "range",
		      path);
	*domains = *named = 0;
	for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
		char dom[32];
		unsigned long long id;
		/* other libraries' NVTX (CUB's "CCCL" push/pop ranges on the cuda backend) */
		if ((!strncmp(line, "start ", 6) || !strncmp(line, "end ", 4)) &&
		    (sscanf(line, "%*s %31s", dom) != 1 || strcmp(dom, "gpud") != 0))
			continue;
		if (!strcmp(line, "domain gpud")) {
			(*domains)++;
		} else if (!strncmp(line, "category gpud ", 14)) {
			(*named)++;
		} else if (sscanf(line, "end %31s %llu", dom, &id) == 2) {
			int found = 0;
			for (int i = 0; i < n; i++)
				if (rs[i].id == id && !strcmp(rs[i].domain, dom)) {
					rs[i].ends++;
					found = 1;
				}
			ck_assert_msg(found, "'%s': an end without its start", line);
		} else if (!strncmp(line, "start ", 6)) {
			ck_assert_int_lt(n, max);
			range *r = &rs[n];
			memset(r, 0, sizeof(*r));
			int used = 0;
			ck_assert_msg(sscanf(line, "start %31s %llu %u %31s %n", r->domain, &r->id,
					     &r->category, r->payload, &used) == 4,
				      "malformed start: '%s'", line);
			snprintf(r->msg, sizeof(r->msg), "%.511s", line + used);
			for (int i = 0; i < n; i++)
				ck_assert_msg(rs[i].id != r->id || strcmp(rs[i].domain, r->domain),
					      "range id %llu started twice", r->id);
			n++;
		}
	}
	return n;
}

/* One expected range of the client's connection. */
typedef struct want {
	const char *verb, *kernel;
	unsigned category; /* the Request body field number */
	unsigned long long bytes;
} want;

START_TEST(test_nvtx_ranges_per_request)
{
	char so[PATH_MAX + 40], rec[PATH_MAX], e1[PATH_MAX + 64], e2[PATH_MAX + 64];
	test_library("libnvtx-record.so", "nvtx", so, sizeof(so), rec, sizeof(rec));
	snprintf(e1, sizeof(e1), "NVTX_INJECTION64_PATH=%s", so);
	snprintf(e2, sizeof(e2), "GPUD_NVTX_RECORD=%s", rec);
	const char *env[] = {e1, e2, NULL};
	start_gpud(NULL, NULL, env);

	/* hello, alloc, upload, alloc with data, run, run with inline arrays,
	 * download, free: each a request of this connection */
	gpud_client *c = lib_connect();
	unsigned conn = gpud_server(c)->connection;
	char tenant[64];
	snprintf(tenant, sizeof(tenant), "%s", gpud_server(c)->tenant);
	enum { N = 256 };
	float xs[N], ys[N], zs[N];
	for (int i = 0; i < N; i++) {
		xs[i] = (float)i;
		ys[i] = 0.5f * (float)i;
	}
	uint64_t shape[1] = {N};
	gpud_handle x, y;
	LIB_OK(c, gpud_alloc(c, GPUD_F32, 1, shape, NULL, &x));
	LIB_OK(c, gpud_upload(c, x, 0, xs, sizeof(xs)));
	LIB_OK(c, gpud_alloc(c, GPUD_F32, 1, shape, ys, &y));
	gpud_arg args[] = {gpud_arg_buffer("x", x), gpud_arg_buffer("y", y)};
	gpud_output out;
	size_t nout;
	LIB_OK(c, gpud_run(c, "add", args, 2, &out, 1, &nout, NULL));
	gpud_array ax = {
		.dtype = GPUD_F32, .ndim = 1, .shape = {N}, .data = xs, .nbytes = sizeof(xs)};
	gpud_array ay = {
		.dtype = GPUD_F32, .ndim = 1, .shape = {N}, .data = ys, .nbytes = sizeof(ys)};
	gpud_arg inl[] = {gpud_arg_array("x", &ax), gpud_arg_array("y", &ay)};
	gpud_result res;
	LIB_OK(c, gpud_call(c, "add", inl, 2, &res, 1, &nout, NULL));
	gpud_array_free(&res.array);
	LIB_OK(c, gpud_download_range(c, out.handle, 0, zs, sizeof(zs)));
	for (int i = 0; i < N; i++)
		ck_assert_float_eq(zs[i], xs[i] + ys[i]);
	gpud_handle all[3] = {x, y, out.handle};
	LIB_OK(c, gpud_free(c, all, 3));
	gpud_close(c);
	stop_gpud_now(0); /* every range has ended: gpud exited 0 */

	static range rs[MAX_RANGES];
	int domains, named;
	int n = read_ranges(rec, rs, MAX_RANGES, &domains, &named);
	ck_assert_msg(domains == 1, "the gpud domain was made %d times", domains);
	const unsigned long long nb = sizeof(xs);
	const want w[] = {
		{"hello", NULL, 10, 0},     {"alloc", NULL, 11, nb}, {"upload", NULL, 12, nb},
		{"alloc", NULL, 11, nb},    {"run", "add", 15, 0},   {"run", "add", 15, 2 * nb},
		{"download", NULL, 13, nb}, {"free", NULL, 14, 0},
	};
	const int nw = (int)(sizeof(w) / sizeof(w[0]));
	int k = 0;
	for (int i = 0; i < n; i++) {
		const range *r = &rs[i];
		char v[600], expect[64];
		ck_assert_msg(r->ends == 1, "range '%s' ended %d times, expected once", r->msg,
			      r->ends);
		field(r->msg, "conn", v, sizeof(v));
		snprintf(expect, sizeof(expect), "%u", conn);
		if (strcmp(v, expect) != 0) { /* the harness's probe connection says hello */
			field(r->msg, "verb", v, sizeof(v));
			ck_assert_msg(!strcmp(v, "hello"), "a range of another connection: '%s'",
				      r->msg);
			continue;
		}
		ck_assert_msg(k < nw, "more ranges than requests: '%s'", r->msg);
		field(r->msg, "verb", v, sizeof(v));
		ck_assert_msg(!strcmp(v, w[k].verb), "range %d is '%s', expected verb %s", k,
			      r->msg, w[k].verb);
		ck_assert_uint_eq(r->category, w[k].category);
		field(r->msg, "tenant", v, sizeof(v));
		/* hello's range starts before hello has fixed the tenant */
		ck_assert_msg(!strcmp(v, k == 0 ? "-" : tenant),
			      "range '%s': tenant %s, expected %s", r->msg, v,
			      k == 0 ? "-" : tenant);
		field(r->msg, "kernel", v, sizeof(v));
		ck_assert_msg(!strcmp(v, w[k].kernel ? w[k].kernel : ""),
			      "range '%s': kernel '%s', expected '%s'", r->msg, v,
			      w[k].kernel ? w[k].kernel : "");
		field(r->msg, "bytes", v, sizeof(v));
		ck_assert_msg(strtoull(v, NULL, 10) == w[k].bytes && v[0],
			      "range '%s': bytes %s, expected %llu", r->msg, v, w[k].bytes);
		ck_assert_msg(strtoull(r->payload, NULL, 10) == w[k].bytes,
			      "range '%s': payload %s, expected %llu", r->msg, r->payload,
			      w[k].bytes);
		field(r->msg, "request", v, sizeof(v));
		ck_assert_msg(strtoull(v, NULL, 10) > 0, "range '%s' names no request id", r->msg);
		k++;
	}
	ck_assert_msg(k == nw, "%d ranges of connection %u, expected %d (one per request)", k, conn,
		      nw);
	/* a category named per verb seen: hello alloc upload run download free */
	ck_assert_msg(named == 6, "%d categories named, expected 6", named);
	unlink(rec);
}
END_TEST

TCase *e2e_trace(void)
{
	TCase *tc = tcase_create("trace");
	tcase_add_checked_fixture(tc, NULL, gpud_teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_nvtx_ranges_per_request);
	return tc;
}

#else

TCase *e2e_trace(void)
{
	printf("e2e: case trace left out: built without the CUDA Toolkit's NVTX headers\n");
	return tcase_create("trace");
}

#endif
