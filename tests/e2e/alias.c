/*
 * tests/e2e/alias.c — test case "alias": no silent aliasing. A run whose
 * output is the buffer of an input (or of another output) is refused before
 * it is queued, naming both arguments, and leaves every buffer as it was;
 * an output a kernel declares in place of an input (the elementwise kernels'
 * z, a custom kernel's output followed by inplace(x)) may be given that
 * input's very buffer and the values come out right. Through libgpud-client
 * and through gpuctl (kernels --args, the listing, --json, run, kernel add);
 * gpud serves on afterwards. On the cpu backend a custom kernel's run stops
 * at the backend (which cannot run it) after its arguments passed the check;
 * on the cuda backend it runs and its values are checked.
 *
 * gpud has no views: every handle is an allocation of its own and a run
 * names whole buffers, so the overlaps a client can make are the same
 * buffer twice; partial overlaps (byte ranges of one allocation) are the
 * unit tests' (kernels/core/test_alias.c).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>

#include <jansson.h>

#include "tests/e2e/e2e.h"

#define N 16

static gpud_handle alloc_f64(gpud_client *c, const double *v, size_t n)
{
	uint64_t shape[1] = {n};
	gpud_handle h;
	LIB_OK(c, gpud_alloc(c, GPUD_F64, 1, shape, v, &h));
	return h;
}

/* Buffer h holds want[0..n) exactly (float64). */
static void assert_holds(gpud_client *c, gpud_handle h, const double *want, size_t n,
			 const char *what)
{
	gpud_array a;
	LIB_OK(c, gpud_download(c, h, &a));
	ck_assert_msg(a.dtype == GPUD_F64 && a.nbytes == n * sizeof(double),
		      "%s: %zu bytes of dtype %d", what, a.nbytes, (int)a.dtype);
	for (size_t i = 0; i < n; i++)
		ck_assert_msg(((double *)a.data)[i] == want[i],
			      "%s: [%zu] is %.17g, expected %.17g", what, i, ((double *)a.data)[i],
			      want[i]);
	gpud_array_free(&a);
}

/* The backend the test's gpud runs is cuda (after a call: hello has been said). */
static int on_cuda(gpud_client *c)
{
	(void)lib_status(c);
	return !strcmp(gpud_server(c)->backend, "cuda");
}

static const char *handle_words(char *buf, size_t len, const char *out, const char *role,
				const char *in, gpud_handle h)
{
	snprintf(buf, len, "output '%s' overlaps %s '%s' (handle %016" PRIx64 "): the same buffer",
		 out, role, in, h);
	return buf;
}

/* lombscargle with pgram given x's (or freqs') buffer: refused, nothing written. */
START_TEST(test_same_handle_refused)
{
	gpud_client *c = lib_connect();
	double x[N], y[N], f[N], base[N];
	char words[256], full[512];
	gen_ls(23, N, N, x, y, f);
	gpud_handle hx = alloc_f64(c, x, N), hy = alloc_f64(c, y, N), hf = alloc_f64(c, f, N);
	gpud_output out[1];
	size_t nout;

	gpud_arg args[] = {gpud_arg_buffer("x", hx), gpud_arg_buffer("y", hy),
			   gpud_arg_buffer("freqs", hf), gpud_arg_buffer("pgram", hx)};
	gpud_daemon_status before = lib_status(c);
	snprintf(full, sizeof(full),
		 "lombscargle: output 'pgram' overlaps input 'x' (handle %016" PRIx64
		 "): the same buffer; lombscargle does not write 'pgram' in place; give it a "
		 "buffer of its own",
		 hx);
	LIB_FAIL(c, gpud_run(c, "lombscargle", args, 4, out, 1, &nout, NULL), GPUD_EINVAL, full);
	args[3] = gpud_arg_buffer("pgram", hf);
	LIB_FAIL(c, gpud_run(c, "lombscargle", args, 4, out, 1, &nout, NULL), GPUD_EINVAL,
		 handle_words(words, sizeof(words), "pgram", "input", "freqs", hf));
	/* with return_outputs (one trip) too */
	gpud_result res[1];
	LIB_FAIL(c, gpud_call(c, "lombscargle", args, 4, res, 1, &nout, NULL), GPUD_EINVAL, words);
	/* nothing ran: the inputs are as uploaded, and no buffer was made */
	assert_holds(c, hx, x, N, "x after the refusals");
	assert_holds(c, hf, f, N, "freqs after the refusals");
	gpud_daemon_status after = lib_status(c);
	ck_assert_uint_eq(after.buffers, before.buffers);
	memcpy(base, x, sizeof(base));

	/* the same run with a buffer of its own goes through */
	uint64_t shape[1] = {N};
	gpud_handle hp;
	LIB_OK(c, gpud_alloc(c, GPUD_F64, 1, shape, NULL, &hp));
	args[3] = gpud_arg_buffer("pgram", hp);
	LIB_OK(c, gpud_run(c, "lombscargle", args, 4, out, 1, &nout, NULL));
	ck_assert_uint_eq(out[0].handle, hp);
	assert_holds(c, hx, base, N, "x after a run");
	gpud_close(c);
	assert_fresh_client_works("lombscargle refused for aliasing");
}
END_TEST

/* add, sub, axpy writing into x or y: allowed (declared), the values right. */
START_TEST(test_in_place_elementwise)
{
	gpud_client *c = lib_connect();
	double x[N], y[N], want[N];
	for (int i = 0; i < N; i++) {
		x[i] = 0.5 * i - 3;
		y[i] = 1.25 + i;
	}
	gpud_handle hx = alloc_f64(c, x, N), hy = alloc_f64(c, y, N);
	gpud_output out[1];
	size_t nout;

	/* z = x + y into x */
	gpud_arg add[] = {gpud_arg_buffer("x", hx), gpud_arg_buffer("y", hy),
			  gpud_arg_buffer("z", hx)};
	LIB_OK(c, gpud_run(c, "add", add, 3, out, 1, &nout, NULL));
	ck_assert_uint_eq(nout, 1);
	ck_assert_uint_eq(out[0].handle, hx);
	for (int i = 0; i < N; i++)
		want[i] = x[i] + y[i];
	assert_holds(c, hx, want, N, "add into x");
	assert_holds(c, hy, y, N, "y after add into x");
	/* z = x - y into y: x is now x + y, so y becomes the old x */
	gpud_arg sub[] = {gpud_arg_buffer("x", hx), gpud_arg_buffer("y", hy),
			  gpud_arg_buffer("z", hy)};
	LIB_OK(c, gpud_run(c, "sub", sub, 3, out, 1, &nout, NULL));
	assert_holds(c, hy, x, N, "sub into y");
	/* z = a x + y into x, x and y one buffer: 3 x */
	gpud_arg axpy[] = {gpud_arg_buffer("x", hy), gpud_arg_buffer("y", hy),
			   gpud_arg_buffer("z", hy), gpud_arg_f64("a", 2)};
	LIB_OK(c, gpud_run(c, "axpy", axpy, 4, out, 1, &nout, NULL));
	for (int i = 0; i < N; i++)
		want[i] = 3 * x[i];
	assert_holds(c, hy, want, N, "axpy with x, y and z one buffer");
	/* a scalar y broadcast, z in place of x */
	gpud_arg mul[] = {gpud_arg_buffer("x", hy), gpud_arg_f64("y", 0.5),
			  gpud_arg_buffer("z", hy)};
	LIB_OK(c, gpud_run(c, "mul", mul, 3, out, 1, &nout, NULL));
	for (int i = 0; i < N; i++)
		want[i] = 1.5 * x[i];
	assert_holds(c, hy, want, N, "mul by a scalar in place");

	/* in place means the very same array: another shape of the same count is not */
	uint64_t shape2[2] = {4, 4};
	gpud_handle h2;
	LIB_OK(c, gpud_alloc(c, GPUD_F64, 2, shape2, x, &h2));
	gpud_arg shaped[] = {gpud_arg_buffer("x", h2), gpud_arg_buffer("y", hy),
			     gpud_arg_buffer("z", hy)};
	LIB_FAIL(c, gpud_run(c, "add", shaped, 3, out, 1, &nout, NULL), GPUD_EINVAL,
		 "add: output 'z' must be float64 with shape (4, 4), got float64 with shape (16,)");
	assert_holds(c, hy, want, N, "y after a refused run");
	gpud_close(c);
}
END_TEST

/* A custom kernel's outputs: in place where declared, refused where not, and two
 * outputs on one buffer always refused. */
START_TEST(test_custom_in_place)
{
	gpud_client *c = lib_connect();
	int cuda = on_cuda(c);
	char words[256];
	gpud_kernel_spec inpl = {.name = "twice_inplace",
				 .elementwise = 1,
				 .in_params = "float64 x",
				 .out_params = "float64 z inplace(x)",
				 .source = "z = 2 * x"};
	gpud_kernel_spec plain = inpl;
	plain.name = "twice_plain";
	plain.out_params = "float64 z";
	gpud_kernel_spec two = {.name = "two_out",
				.elementwise = 1,
				.in_params = "float64 x",
				.out_params = "float64 z inplace(x), float64 w",
				.source = "z = 2 * x; w = 3 * x"};
	LIB_OK(c, gpud_register(c, &inpl));
	LIB_OK(c, gpud_register(c, &plain));
	LIB_OK(c, gpud_register(c, &two));

	/* the listing says which */
	gpud_kernel_list *l;
	int seen = 0;
	LIB_OK(c, gpud_kernels(c, &l));
	for (size_t i = 0; i < l->count; i++) {
		const gpud_kernel_info *k = &l->kernels[i];
		static const struct {
			const char *kernel, *param, *inplace_of;
		} want[] = {
			{"twice_inplace", "z", "x"},  {"twice_plain", "z", ""},
			{"two_out", "z", "x"},        {"two_out", "w", ""},
			{"add", "z", "x|y"},          {"add", "x", ""},
			{"lombscargle", "pgram", ""}, {"lombscargle", "x", ""},
		};
		for (size_t j = 0; j < k->nparams; j++) {
			size_t w = 0;
			while (w < sizeof(want) / sizeof(want[0]) &&
			       (strcmp(want[w].kernel, k->name) ||
				strcmp(want[w].param, k->params[j].name)))
				w++;
			if (w == sizeof(want) / sizeof(want[0]))
				continue;
			seen++;
			ck_assert_msg(!strcmp(k->params[j].inplace_of, want[w].inplace_of),
				      "%s.%s: inplace_of '%s', expected '%s'", k->name,
				      k->params[j].name, k->params[j].inplace_of,
				      want[w].inplace_of);
		}
	}
	gpud_kernel_list_free(l);
	ck_assert_int_eq(seen, 8);

	double x[N], want[N];
	for (int i = 0; i < N; i++) {
		x[i] = i - 5.5;
		want[i] = 2 * x[i];
	}
	gpud_handle hx = alloc_f64(c, x, N);
	gpud_output out[2];
	size_t nout;
	gpud_arg args[] = {gpud_arg_buffer("x", hx), gpud_arg_buffer("z", hx)};

	LIB_FAIL(c, gpud_run(c, "twice_plain", args, 2, out, 1, &nout, NULL), GPUD_EINVAL,
		 handle_words(words, sizeof(words), "z", "input", "x", hx));
	ck_assert_msg(strstr(gpud_errmsg(c), "twice_plain does not declare 'z' in place of 'x' "
					     "(inplace(x) after the output's declaration)"),
		      "%s", gpud_errmsg(c));
	gpud_status st = gpud_run(c, "twice_inplace", args, 2, out, 1, &nout, NULL);
	if (cuda) {
		ck_assert_msg(st == GPUD_OK, "twice_inplace in place: %s", gpud_errmsg(c));
		assert_holds(c, hx, want, N, "twice_inplace in place");
	} else {
		/* past the check: refused by the backend only */
		ck_assert_msg(st != GPUD_OK && strstr(gpud_errmsg(c), "custom kernels need the "
								      "cuda backend"),
			      "twice_inplace in place on the cpu backend: %s", gpud_errmsg(c));
		assert_holds(c, hx, x, N, "x after twice_inplace on the cpu backend");
	}
	/* two outputs on one buffer (z in place of x, w too) */
	gpud_arg both[] = {gpud_arg_buffer("x", hx), gpud_arg_buffer("z", hx),
			   gpud_arg_buffer("w", hx)};
	LIB_FAIL(c, gpud_run(c, "two_out", both, 3, out, 2, &nout, NULL), GPUD_EINVAL,
		 handle_words(words, sizeof(words), "z", "output", "w", hx));
	ck_assert_msg(strstr(gpud_errmsg(c), "each output needs bytes of its own"), "%s",
		      gpud_errmsg(c));
	uint64_t shape[1] = {N};
	gpud_handle hw;
	LIB_OK(c, gpud_alloc(c, GPUD_F64, 1, shape, NULL, &hw));
	gpud_arg wx[] = {gpud_arg_buffer("x", hx), gpud_arg_buffer("w", hx),
			 gpud_arg_buffer("z", hw)};
	LIB_FAIL(c, gpud_run(c, "two_out", wx, 3, out, 2, &nout, NULL), GPUD_EINVAL,
		 handle_words(words, sizeof(words), "w", "input", "x", hx));

	/* declarations gpud refuses */
	static const struct {
		const char *in, *out, *words;
	} bad[] = {
		{"float64 x", "float64 z inplace(q)",
		 "output 'z' inplace(q): 'q' is not a parameter"},
		{"float64 x, float32 y", "float64 z inplace(y)",
		 "output 'z' inplace(y): 'y' is float32 but 'z' is float64; in place needs one "
		 "dtype"},
		{"float64 x inplace(z)", "float64 z", "inplace(...) is for outputs"},
		{"float64 x", "float64 z inplace(x",
		 "expected inplace(INPUT) or inplace(INPUT|INPUT"},
		{"float64 x", "float64 z, float64 w inplace(z)",
		 "output 'w' inplace(z): 'z' is not an input array"},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		gpud_kernel_spec k = inpl;
		k.name = "bad_inplace";
		k.in_params = bad[i].in;
		k.out_params = bad[i].out;
		LIB_FAIL(c, gpud_register(c, &k), GPUD_EINVAL, bad[i].words);
	}
	/* a raw kernel's signature */
	gpud_kernel_spec raw = {
		.name = "raw_inplace",
		.source = "extern \"C\" __global__ void scale(const double *x, double "
			  "*y, long long n) { long long i = blockIdx.x * "
			  "blockDim.x + threadIdx.x; if (i < n) y[i] = 2 * x[i]; }",
		.entry = "scale",
		.signature = "x:in f64[], y:out f64[] inplace(x), n:i64"};
	LIB_OK(c, gpud_register(c, &raw));
	raw.name = "raw_plain";
	raw.signature = "x:in f64[], y:out f64[], n:i64";
	LIB_OK(c, gpud_register(c, &raw));
	gpud_arg rargs[] = {gpud_arg_buffer("x", hx), gpud_arg_buffer("y", hx),
			    gpud_arg_i64("n", N), gpud_arg_i64("_grid", 1),
			    gpud_arg_i64("_block", 32)};
	LIB_FAIL(c, gpud_run(c, "raw_plain", rargs, 5, out, 1, &nout, NULL), GPUD_EINVAL,
		 handle_words(words, sizeof(words), "y", "input", "x", hx));
	st = gpud_run(c, "raw_inplace", rargs, 5, out, 1, &nout, NULL);
	ck_assert_msg(cuda ? st == GPUD_OK
			   : st != GPUD_OK &&
				      strstr(gpud_errmsg(c), "custom kernels need the cuda"),
		      "raw_inplace in place: %s", gpud_errmsg(c));
	gpud_close(c);
	assert_fresh_client_works("custom kernels refused for aliasing");
}
END_TEST

/* A kept buffer from a float64 vector through gpuctl: its handle (16 hex digits). */
static void ctl_upload(const char *name, const double *v, size_t n, char *handle)
{
	char path[700];
	path_in_dir(path, sizeof(path), name);
	save_vec(path, GPUD_F64, v, n);
	ctl_result *r = CTL("upload", "--keep", path);
	assert_ctl_ok(r);
	ck_assert_msg(strlen(r->out) == 17, "upload printed '%s'", r->out);
	memcpy(handle, r->out, 16);
	handle[16] = '\0';
}

/* The same through gpuctl: what kernels says, run refused and run in place. */
START_TEST(test_gpuctl)
{
	ctl_result *r = CTL("kernels", "--args", "add");
	assert_ctl_ok(r);
	ck_assert_str_eq(r->out, "x in\ny in\nz out inplace=x|y\n");
	r = CTL("kernels", "--args", "lombscargle");
	assert_ctl_ok(r);
	ck_assert_msg(strstr(r->out, "pgram out\n") && !strstr(r->out, "inplace"), "%s", r->out);
	r = CTL("kernels");
	assert_ctl_ok(r);
	ck_assert_msg(strstr(r->out, "(may be written in place of x|y)"), "%s", r->out);
	r = CTL("kernels", "--json");
	assert_ctl_ok(r);
	json_error_t je;
	json_t *doc = json_loads(r->out, 0, &je), *ks = json_object_get(doc, "kernels");
	ck_assert_msg(doc != NULL, "kernels --json: %s", je.text);
	int seen = 0;
	for (size_t i = 0; i < json_array_size(ks); i++) {
		json_t *k = json_array_get(ks, i), *ps = json_object_get(k, "params");
		const char *kn = json_string_value(json_object_get(k, "name"));
		for (size_t j = 0; j < json_array_size(ps); j++) {
			json_t *p = json_array_get(ps, j), *in = json_object_get(p, "inplace_of");
			const char *pn = json_string_value(json_object_get(p, "name"));
			ck_assert_msg(json_is_array(in), "%s.%s: no inplace_of array", kn, pn);
			char got[64] = "";
			for (size_t m = 0; m < json_array_size(in); m++)
				snprintf(got + strlen(got), sizeof(got) - strlen(got), "%s%s",
					 m ? "|" : "", json_string_value(json_array_get(in, m)));
			const char *expect = !strcmp(kn, "add") && !strcmp(pn, "z") ? "x|y" : NULL;
			if (!strcmp(kn, "add") || !strcmp(kn, "lombscargle")) {
				ck_assert_msg(!strcmp(got, expect ? expect : ""),
					      "%s.%s: inplace_of %s", kn, pn, got);
				seen++;
			}
		}
	}
	json_decref(doc);
	ck_assert_int_ge(seen, 4);

	double x[N], y[N], f[N];
	char hx[20], hy[20], hf[20], ax[40], ay[40], af[40], ap[40], az[40], words[256];
	gen_ls(5, N, N, x, y, f);
	ctl_upload("x.npy", x, N, hx);
	ctl_upload("y.npy", y, N, hy);
	ctl_upload("f.npy", f, N, hf);
	snprintf(ax, sizeof(ax), "x=%%%s", hx);
	snprintf(ay, sizeof(ay), "y=%%%s", hy);
	snprintf(af, sizeof(af), "freqs=%%%s", hf);
	snprintf(ap, sizeof(ap), "pgram=%%%s", hx);
	snprintf(words, sizeof(words),
		 "lombscargle: output 'pgram' overlaps input 'x' (handle %s): the same buffer", hx);
	CTL_FAIL(EX_DATAERR, words, "run", "lombscargle", ax, ay, af, ap);

	/* add into x, then the values */
	snprintf(az, sizeof(az), "z=%%%s", hx);
	assert_ctl_ok(CTL("run", "add", ax, ay, az));
	gpud_client *c = lib_connect();
	int cuda = on_cuda(c);
	double want[N];
	for (int i = 0; i < N; i++)
		want[i] = x[i] + y[i];
	assert_holds(c, strtoull(hx, NULL, 16), want, N, "gpuctl run add into x");
	assert_holds(c, strtoull(hy, NULL, 16), y, N, "y after gpuctl run add into x");

	/* kernel add with inplace(...), and what kernels --args says of it */
	assert_ctl_ok(CTL("kernel", "add", "neg", "--elementwise", "float64 x",
			  "float64 z inplace(x)", "z = -x"));
	r = CTL("kernels", "--args", "neg");
	assert_ctl_ok(r);
	ck_assert_str_eq(r->out, "x in\nz out inplace=x\n");
	assert_ctl_ok(CTL("kernel", "add", "neg_plain", "--elementwise", "float64 x", "float64 z",
			  "z = -x"));
	CTL_FAIL(EX_DATAERR, "neg_plain: output 'z' overlaps input 'x'", "run", "neg_plain", ax,
		 az);
	r = CTL("run", "neg", ax, az);
	if (cuda) {
		assert_ctl_ok(r);
		for (int i = 0; i < N; i++)
			want[i] = -want[i];
		assert_holds(c, strtoull(hx, NULL, 16), want, N, "gpuctl run neg in place");
	} else {
		ck_assert_int_eq(r->code, EX_SOFTWARE);
		ck_assert_msg(strstr(r->err, "custom kernels need the cuda backend"), "%s", r->err);
	}
	CTL_FAIL(EX_DATAERR, "inplace(...) is for outputs", "kernel", "add", "bad", "--elementwise",
		 "float64 x inplace(z)", "float64 z", "z = x");
	gpud_close(c);
	assert_daemon_alive("gpuctl runs refused for aliasing");
}
END_TEST

TCase *e2e_alias(void)
{
	TCase *tc = tcase_create("alias");
	tcase_add_checked_fixture(tc, setup_default, gpud_teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_same_handle_refused);
	tcase_add_test(tc, test_in_place_elementwise);
	tcase_add_test(tc, test_custom_in_place);
	tcase_add_test(tc, test_gpuctl);
	return tc;
}
