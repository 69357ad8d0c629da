/*
 * tests/gpu/custom.c — test case "custom kernels": custom kernels compiled by
 * gpud against the CPU, and a fault in one that ends the context. Runs on
 * main's thread (CK_NOFORK).
 */
#include <check.h>
#include <pthread.h>
#include <inttypes.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <gpud/client.h>

#include "kernels/core/kernel.h"
#include "tests/gpu/gpu_test.h"
#include "tests/harness.h"
#include "tests/gpu/suite.h"

/* --- custom kernels ---------------------------------------------------------------- */

static char cache_conf[256];

static gpud_kernel_spec ew_spec(const char *name, const char *in, const char *out, const char *body)
{
	gpud_kernel_spec s = {
		.name = name, .elementwise = 1, .in_params = in, .out_params = out, .source = body};
	return s;
}

static const char scale_src[] =
	"extern \"C\" __global__ void scale(const float *x, float *y, float s, long long n)\n"
	"{\n"
	"\tfor (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;\n"
	"\t     i += (long long)gridDim.x * blockDim.x)\n"
	"\t\ty[i] = s * x[i];\n"
	"}\n";

START_TEST(custom_kernels_against_cpu)
{
	char dir[128];
	snprintf(dir, sizeof(dir), "/tmp/gpud-kcache-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(cache_conf, sizeof(cache_conf), "[gpud]\nkernel_cache = %s\n", dir);
	start_gpud_with(cache_conf);
	gpud_client *c;
	ck_assert(connect_timeout(&c) == GPUD_OK);

	/* elementwise float32: z = exp(a * sin(x) + cos(y)), a broadcast */
	gpud_kernel_spec st = ew_spec("my_saxpy_trig", "float32 x, float32 y, float32 a",
				      "float32 z", "z = exp(a * sin(x) + cos(y))");
	ck_assert_msg(gpud_register(c, &st) == GPUD_OK, "%s", gpud_errmsg(c));
	uint64_t n = (1u << 20) + 7;
	float *x = make_array(GPUD_F32, n, -3, 3, 0), *y = make_array(GPUD_F32, n, -3, 3, 0);
	float *z = malloc(n * 4);
	gpud_handle hx, hy, hz = poisoned(c, GPUD_F32, n);
	ck_assert(gpud_alloc(c, GPUD_F32, 1, &n, x, &hx) == GPUD_OK);
	ck_assert(gpud_alloc(c, GPUD_F32, 1, &n, y, &hy) == GPUD_OK);
	gpud_arg args[] = {gpud_arg_buffer("x", hx), gpud_arg_buffer("y", hy),
			   gpud_arg_f64("a", 0.7), gpud_arg_buffer("z", hz)};
	gpud_output o;
	size_t no;
	ck_assert_msg(gpud_run(c, "my_saxpy_trig", args, 4, &o, 1, &no, NULL) == GPUD_OK, "%s",
		      gpud_errmsg(c));
	ck_assert(gpud_download_range(c, hz, 0, z, n * 4) == GPUD_OK);
	double worst = 0;
	size_t unwritten = 0;
	for (uint64_t i = 0; i < n; i++) {
		if (is_poison(GPUD_F32, z, i)) {
			unwritten++;
			continue;
		}
		double ref = exp(0.7 * sin((double)x[i]) + cos((double)y[i]));
		double e = fabs(z[i] - ref) / fabs(ref);
		if (!(e <= worst))
			worst = e;
	}
	printf("custom my_saxpy_trig f32, n=%llu: max rel err %.2e, unwritten %zu\n",
	       (unsigned long long)n, worst, unwritten);
	ck_assert_uint_eq(unwritten, 0);
	ck_assert_msg(worst < 1e-5, "saxpy_trig max relative error %g", worst);

	/* elementwise float64 with both inputs arrays, through gpud_call */
	gpud_kernel_spec rd = ew_spec("rel_diff_c", "float64 x, float64 y", "float64 d",
				      "d = 2 * (x - y) / (x + y)");
	ck_assert_msg(gpud_register(c, &rd) == GPUD_OK, "%s", gpud_errmsg(c));
	uint64_t m = 100003;
	double *dx = make_array(GPUD_F64, m, 1, 5, 0), *dy = make_array(GPUD_F64, m, 1, 5, 0);
	gpud_array ax = {.dtype = GPUD_F64, .ndim = 1, .shape = {m}, .data = dx, .nbytes = m * 8},
		   ay = {.dtype = GPUD_F64, .ndim = 1, .shape = {m}, .data = dy, .nbytes = m * 8};
	gpud_arg cargs[] = {gpud_arg_array("x", &ax), gpud_arg_array("y", &ay)};
	gpud_result res;
	ck_assert_msg(gpud_call(c, "rel_diff_c", cargs, 2, &res, 1, &no, NULL) == GPUD_OK, "%s",
		      gpud_errmsg(c));
	for (uint64_t i = 0; i < m; i++) {
		double ref = 2 * (dx[i] - dy[i]) / (dx[i] + dy[i]);
		ck_assert_msg(fabs(((double *)res.array.data)[i] - ref) <= 1e-12 * (1 + fabs(ref)),
			      "rel_diff_c[%llu] = %.17g, expected %.17g", (unsigned long long)i,
			      ((double *)res.array.data)[i], ref);
	}
	gpud_array_free(&res.array);

	/* raw, grid-stride (SMs x 2 blocks), and raw with _grid/_block per run */
	gpud_kernel_spec sc = {.name = "scale_gs",
			       .source = scale_src,
			       .entry = "scale",
			       .signature = "x:in f32[], y:out f32[], s:f32, n:i64",
			       .blocks_per_sm = 2};
	ck_assert_msg(gpud_register(c, &sc) == GPUD_OK, "%s", gpud_errmsg(c));
	gpud_kernel_spec sc2 = sc;
	sc2.name = "scale_explicit";
	sc2.blocks_per_sm = 0;
	ck_assert_msg(gpud_register(c, &sc2) == GPUD_OK, "%s", gpud_errmsg(c));
	for (int variant = 0; variant < 2; variant++) {
		gpud_handle hy2 = poisoned(c, GPUD_F32, n);
		gpud_arg ra[6] = {gpud_arg_buffer("x", hx),
				  gpud_arg_buffer("y", hy2),
				  gpud_arg_f64("s", -2.5),
				  gpud_arg_i64("n", (int64_t)n),
				  gpud_arg_i64("_grid", (int64_t)((n + 255) / 256)),
				  gpud_arg_i64("_block", 256)};
		ck_assert_msg(gpud_run(c, variant ? "scale_explicit" : "scale_gs", ra,
				       variant ? 6 : 4, &o, 1, &no, NULL) == GPUD_OK,
			      "%s", gpud_errmsg(c));
		ck_assert(gpud_download_range(c, hy2, 0, z, n * 4) == GPUD_OK);
		for (uint64_t i = 0; i < n; i++)
			ck_assert_msg(z[i] == -2.5f * x[i], "%s y[%llu] = %g, expected %g",
				      variant ? "explicit" : "grid-stride", (unsigned long long)i,
				      (double)z[i], (double)(-2.5f * x[i]));
		gpud_free(c, &hy2, 1);
	}

	/* a source that does not compile: NVRTC's log, with the line */
	gpud_kernel_spec bad = {
		.name = "broken",
		.source =
			"extern \"C\" __global__ void broken(float *y)\n{\n\ty[0] = undefined_thing;\n}\n",
		.entry = "broken",
		.signature = "y:out f32[]",
		.blocks_per_sm = 1};
	ck_assert_int_eq(gpud_register(c, &bad), GPUD_EINVAL);
	printf("compile error: %s\n", gpud_errmsg(c));
	ck_assert_msg(strstr(gpud_errmsg(c), "undefined_thing") && strstr(gpud_errmsg(c), "(3)"),
		      "the log should name the identifier and line 3: %s", gpud_errmsg(c));
	/* a bad _block is refused before the launch */
	gpud_arg badl[6] = {gpud_arg_buffer("x", hx), gpud_arg_buffer("y", hz),
			    gpud_arg_f64("s", 1),     gpud_arg_i64("n", 1),
			    gpud_arg_i64("_grid", 1), gpud_arg_i64("_block", 4096)};
	ck_assert_int_eq(gpud_run(c, "scale_explicit", badl, 6, &o, 1, &no, NULL), GPUD_EINVAL);
	ck_assert_msg(strstr(gpud_errmsg(c), "_block"), "%s", gpud_errmsg(c));
	gpud_close(c);
	stop_gpud();

	/* a restart: the registrations come back, their code from the cache */
	start_gpud_with(cache_conf);
	ck_assert(connect_timeout(&c) == GPUD_OK);
	gpud_kernel_list *kl;
	ck_assert(gpud_kernels(c, &kl) == GPUD_OK);
	int found = 0;
	for (size_t i = 0; i < kl->count; i++)
		if (!strcmp(kl->kernels[i].name, "my_saxpy_trig")) {
			found = 1;
			ck_assert_msg(strstr(kl->kernels[i].doc, "loaded from the compile cache"),
				      "after a restart: %s", kl->kernels[i].doc);
		}
	gpud_kernel_list_free(kl);
	ck_assert_msg(found, "my_saxpy_trig did not survive the restart");
	gpud_array a32 = {.dtype = GPUD_F32, .ndim = 1, .shape = {n}, .data = x, .nbytes = n * 4},
		   b32 = {.dtype = GPUD_F32, .ndim = 1, .shape = {n}, .data = y, .nbytes = n * 4};
	gpud_arg after[] = {gpud_arg_array("x", &a32), gpud_arg_array("y", &b32),
			    gpud_arg_f64("a", 0.7)};
	ck_assert_msg(gpud_call(c, "my_saxpy_trig", after, 3, &res, 1, &no, NULL) == GPUD_OK, "%s",
		      gpud_errmsg(c));
	for (uint64_t i = 0; i < n; i += 997) {
		double ref = exp(0.7 * sin((double)x[i]) + cos((double)y[i]));
		ck_assert(fabs(((float *)res.array.data)[i] - ref) <= 1e-5 * fabs(ref));
	}
	gpud_array_free(&res.array);
	ck_assert(gpud_unregister(c, "my_saxpy_trig") == GPUD_OK);
	gpud_close(c);
	stop_gpud();
	char cmd[200];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	ck_assert_int_eq(system(cmd), 0);
	free(x);
	free(y);
	free(z);
	free(dx);
	free(dy);
}
END_TEST

/*
 * With kernel_workers = 0, custom kernels run in gpud's own context: a
 * fault there gives its client the CUDA error, every other request after it
 * the same, and gpud exits 1 for its supervisor to start a fresh one (one
 * context serves every tenant; docs/lab-node.md says so). tests/gpu/isolation.c has
 * the default, tenant workers.
 */
START_TEST(custom_kernel_fault_ends_the_context)
{
	/* device_lost = exit: with several devices (GPUD_TEST_DEVICES) the
	 * others would serve on otherwise (tests/e2e/devices.c) */
	start_gpud_with("[gpud]\nkernel_workers = 0\ndevice_lost = exit\n");
	gpud_client *c, *other;
	ck_assert(connect_timeout(&c) == GPUD_OK);
	ck_assert(connect_timeout(&other) == GPUD_OK);
	ck_assert_msg(gpud_register(c, &crash_spec) == GPUD_OK, "%s", gpud_errmsg(c));
	gpud_handle y = poisoned(c, GPUD_F32, 32);
	gpud_arg args[] = {gpud_arg_buffer("y", y)};
	gpud_output o;
	size_t no;
	gpud_status st = gpud_run(c, "crash", args, 1, &o, 1, &no, NULL);
	printf("a faulting kernel: %s: %s\n", gpud_strerror(st), gpud_errmsg(c));
	ck_assert_int_eq(st, GPUD_EBACKEND);
	ck_assert_msg(strstr(gpud_errmsg(c), "cuda") || strstr(gpud_errmsg(c), "CUDA") ||
			      strstr(gpud_errmsg(c), "illegal"),
		      "%s", gpud_errmsg(c));
	ck_assert_msg(harness_gpud_wait(&gpud, 10) == 0,
		      "gpud still runs after losing its context");
	int wst = gpud.wstatus;
	ck_assert_msg(WIFEXITED(wst) && WEXITSTATUS(wst) == 1,
		      "gpud should exit 1 after losing its context (status %d)", wst);
	gpud_close(c);
	gpud_close(other);
	ck_assert_int_eq(harness_gpud_remove(&gpud), 0);
}
END_TEST

/* Reduction kernels (CuPy's ReductionKernel): the whole array, and each row of
 * a 2-d array into a poisoned output, against sums done here in long double. */
START_TEST(custom_reduction_against_cpu)
{
	start_gpud_with("[gpud]\nlog_level = warn\n");
	gpud_client *c;
	ck_assert(connect_timeout(&c) == GPUD_OK);
	gpud_reduction_spec l2 = {.name = "l2_c",
				  .in_params = "float32 x",
				  .out_params = "float32 y",
				  .map_expr = "x * x",
				  .reduce_expr = "a + b",
				  .post_map_expr = "y = sqrt(a)",
				  .identity = "0",
				  .reduce_type = "float64"};
	ck_assert_msg(gpud_register_reduction(c, &l2, GPUD_REGISTER_UNPINNED) == GPUD_OK, "%s",
		      gpud_errmsg(c));
	uint64_t n = (1u << 20) + 13;
	float *x = make_array(GPUD_F32, n, -3, 3, 0);
	gpud_array ax = {.dtype = GPUD_F32, .ndim = 1, .shape = {n}, .data = x, .nbytes = n * 4};
	gpud_arg a1[] = {gpud_arg_array("x", &ax)};
	gpud_result res;
	size_t no;
	ck_assert_msg(gpud_call(c, "l2_c", a1, 1, &res, 1, &no, NULL) == GPUD_OK, "%s",
		      gpud_errmsg(c));
	long double ss = 0;
	for (uint64_t i = 0; i < n; i++)
		ss += (long double)x[i] * x[i];
	double ref = sqrt((double)ss), got = ((float *)res.array.data)[0];
	printf("custom reduction l2_c f32 (f64 sums), n=%llu: %.9g vs %.9g\n",
	       (unsigned long long)n, got, ref);
	ck_assert_int_eq(res.array.ndim, 0);
	ck_assert_msg(fabs(got - ref) <= 1e-6 * ref, "l2: %.9g, expected %.9g", got, ref);
	gpud_array_free(&res.array);

	/* rows of a 2-d float64 array, weighted by another, into a poisoned buffer */
	gpud_reduction_spec ws = {.name = "wsum_c",
				  .in_params = "float64 x, float64 w",
				  .out_params = "float64 y",
				  .map_expr = "x * w",
				  .reduce_expr = "a + b",
				  .post_map_expr = "y = a",
				  .identity = "0",
				  .block = 512};
	ck_assert_msg(gpud_register_reduction(c, &ws, 0) == GPUD_OK, "%s", gpud_errmsg(c));
	uint64_t rows = 301, cols = 4099, shape[2] = {rows, cols};
	double *m = make_array(GPUD_F64, rows * cols, -2, 2, 0),
	       *w = make_array(GPUD_F64, rows * cols, 0, 1, 0), *y = malloc(rows * 8);
	gpud_handle hm, hw, hy = poisoned(c, GPUD_F64, rows);
	ck_assert(gpud_alloc(c, GPUD_F64, 2, shape, m, &hm) == GPUD_OK);
	ck_assert(gpud_alloc(c, GPUD_F64, 2, shape, w, &hw) == GPUD_OK);
	gpud_arg a2[] = {gpud_arg_buffer("x", hm), gpud_arg_buffer("w", hw),
			 gpud_arg_i64("_axis", -1), gpud_arg_buffer("y", hy)};
	gpud_output o;
	ck_assert_msg(gpud_run(c, "wsum_c", a2, 4, &o, 1, &no, NULL) == GPUD_OK, "%s",
		      gpud_errmsg(c));
	ck_assert(gpud_download_range(c, hy, 0, y, rows * 8) == GPUD_OK);
	double worst = 0;
	size_t unwritten = 0;
	for (uint64_t r = 0; r < rows; r++) {
		if (is_poison(GPUD_F64, y, r)) {
			unwritten++;
			continue;
		}
		long double s = 0, mag = 0;
		for (uint64_t j = 0; j < cols; j++) {
			s += (long double)m[r * cols + j] * w[r * cols + j];
			mag += fabsl((long double)m[r * cols + j] * w[r * cols + j]);
		}
		double e = fabs(y[r] - (double)s) / (double)mag;
		if (!(e <= worst))
			worst = e;
	}
	printf("custom reduction wsum_c f64 rows=%llu cols=%llu: max err %.2e of the sum of "
	       "|terms|, unwritten %zu\n",
	       (unsigned long long)rows, (unsigned long long)cols, worst, unwritten);
	ck_assert_uint_eq(unwritten, 0);
	ck_assert_msg(worst < 1e-13, "wsum max error %g", worst);
	gpud_close(c);
	stop_gpud();
	free(x);
	free(m);
	free(w);
	free(y);
}
END_TEST

TCase *custom_tcase(void)
{
	TCase *tc = tcase_create("custom kernels");

	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, custom_kernels_against_cpu);
	tcase_add_test(tc, custom_reduction_against_cpu);
	tcase_add_test(tc, custom_kernel_fault_ends_the_context);
	return tc;
}
