/*
 * tests/e2e/gpuctl.c — test cases "gpuctl" (the gpuctl binary: runs written
 * to .npy files, the kernel library, kernels and status, a dead URL, errors
 * named on stderr) and "no libraries" (a gpud whose BLAS and cuRAND cannot be
 * loaded serves the rest and says why).
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sysexits.h>
#include <unistd.h>

#include <gpud/npy.h>

#include "tests/e2e/e2e.h"

START_TEST(test_gpuctl_run_writes_output)
{
	static const gpud_dtype dts[] = {GPUD_F64, GPUD_F32};
	const size_t nx = 120, nf = 333;
	double x[120], y[120], f[333], ref[333];
	char px[700], py[700], pf[700], po[700], err[512];

	path_in_dir(px, sizeof(px), "x.npy");
	path_in_dir(py, sizeof(py), "y.npy");
	path_in_dir(pf, sizeof(pf), "freqs.npy");
	path_in_dir(po, sizeof(po), "out.npy");
	for (int d = 0; d < 2; d++) {
		for (int combo = 0; combo < 4; combo++) {
			gpud_dtype dt = dts[d];
			int pre = combo & 1, norm = combo >> 1;
			char ax[720], ay[720], afr[720], ao[720], what[96];

			gen_ls(555 + (uint64_t)(d * 4 + combo), nx, nf, x, y, f);
			if (dt == GPUD_F32) {
				round_to_f32(x, nx);
				round_to_f32(y, nx);
				round_to_f32(f, nf);
			}
			save_vec(px, dt, x, nx);
			save_vec(py, dt, y, nx);
			save_vec(pf, dt, f, nf);
			ls_ref(x, y, nx, f, nf, pre, norm, ref);
			snprintf(ax, sizeof(ax), "x=%s", px);
			snprintf(ay, sizeof(ay), "y=%s", py);
			snprintf(afr, sizeof(afr), "freqs=%s", pf);
			snprintf(ao, sizeof(ao), "pgram=%s", po);
			unlink(po);
			ctl_result *r;
			if (combo == 3) /* named output, numeric booleans */
				r = CTL("run", "lombscargle", ax, ay, afr, "precenter=1",
					"normalize=1", "-o", ao);
			else
				r = CTL("run", "lombscargle", ax, ay, afr,
					pre ? "precenter=true" : "precenter=false",
					norm ? "normalize=TRUE" : "normalize=false", "-o", po);
			assert_ctl_ok(r);
			ck_assert_msg(r->err[0] == '\0', "'%s' wrote to stderr: %s", r->cmd,
				      r->err);

			gpud_array a;
			ck_assert_msg(gpud_npy_load(po, &a, err, sizeof(err)) == 0, "%s", err);
			ck_assert_int_eq(a.dtype, dt);
			ck_assert_int_eq(a.ndim, 1);
			ck_assert_uint_eq(a.shape[0], nf);
			snprintf(what, sizeof(what), "gpuctl run %s precenter=%d normalize=%d",
				 gpud_dtype_name(dt), pre, norm);
			assert_matches(a.data, dt, ref, nf, what);
			gpud_array_free(&a);
		}
	}

	/* Without -o: a summary line per output on stdout. */
	char ax[720], ay[720], afr[720];
	snprintf(ax, sizeof(ax), "x=%s", px);
	snprintf(ay, sizeof(ay), "y=%s", py);
	snprintf(afr, sizeof(afr), "freqs=%s", pf);
	ctl_result *r = CTL("run", "lombscargle", ax, ay, afr);
	assert_ctl_ok(r);
	ck_assert_msg(strstr(r->out, "pgram: float32 (333,) [") != NULL, "summary: '%s'", r->out);

	/* gpuctl freed everything it uploaded. */
	gpud_client *c = lib_connect();
	gpud_daemon_status s = wait_no_buffers(c, 2.0);
	ck_assert_uint_eq(s.buffers, 0);
	gpud_close(c);
}
END_TEST

/* The library's elementwise kernels through gpuctl: arrays and a broadcast scalar. */
START_TEST(test_gpuctl_elementwise)
{
	char px[700], py[700], po[700], ax[720], ay[720], err[512];
	double x[5] = {1, -2, 3.5, 0.25, 8}, y[5] = {0.5, 4, -1, 2, 3};
	path_in_dir(px, sizeof(px), "ex.npy");
	path_in_dir(py, sizeof(py), "ey.npy");
	path_in_dir(po, sizeof(po), "ez.npy");
	save_vec(px, GPUD_F64, x, 5);
	save_vec(py, GPUD_F64, y, 5);
	snprintf(ax, sizeof(ax), "x=%s", px);
	snprintf(ay, sizeof(ay), "y=%s", py);
	assert_ctl_ok(CTL("run", "axpy", ax, ay, "a=-2", "-o", po));
	gpud_array z;
	ck_assert_msg(gpud_npy_load(po, &z, err, sizeof(err)) == 0, "%s", err);
	for (int i = 0; i < 5; i++)
		ck_assert_msg(((double *)z.data)[i] == -2 * x[i] + y[i], "axpy[%d]", i);
	gpud_array_free(&z);
	assert_ctl_ok(CTL("run", "sub", ax, "y=0.5", "-o", po));
	ck_assert_msg(gpud_npy_load(po, &z, err, sizeof(err)) == 0, "%s", err);
	for (int i = 0; i < 5; i++)
		ck_assert(((double *)z.data)[i] == x[i] - 0.5);
	gpud_array_free(&z);
	CTL_FAIL(EX_DATAERR, "x or y must be an array", "run", "mul", "x=1", "y=2");
	/* reductions give a 0-d array */
	assert_ctl_ok(CTL("run", "dot", ax, ay, "-o", po));
	ck_assert_msg(gpud_npy_load(po, &z, err, sizeof(err)) == 0, "%s", err);
	ck_assert_int_eq(z.ndim, 0);
	double want = 0;
	for (int i = 0; i < 5; i++)
		want += x[i] * y[i];
	ck_assert_msg(((double *)z.data)[0] == want, "dot = %g, want %g", ((double *)z.data)[0],
		      want);
	gpud_array_free(&z);
	CTL_FAIL(EX_DATAERR, "argument 'y' must be a buffer", "run", "dot", ax, "y=1");
	CTL_FAIL(EX_DATAERR, "missing argument 'a'", "run", "saxpy_trig", ax, ay);
	ctl_result *r = CTL("kernels");
	assert_ctl_ok(r);
	ck_assert_msg(strstr(r->out, "sum_of_squares") && strstr(r->out, "rel_diff"), "%s", r->out);
}
END_TEST

/* complex64 and complex128 .npy files: upload and download bit for bit; no kernel takes them. */
START_TEST(test_gpuctl_complex)
{
	char pin[700], pout[700], arg[720], err[512];
	float c8[6] = {1.5f, -2.0f, 0.25f, 4.0f, -0.0f, 1e30f};
	double c16[4] = {-1e300, 0.5, 3.0, -7.25};
	struct {
		gpud_dtype dt;
		void *data;
		size_t n, bytes;
	} cases[] = {{GPUD_C64, c8, 3, sizeof(c8)}, {GPUD_C128, c16, 2, sizeof(c16)}};

	for (size_t i = 0; i < 2; i++) {
		gpud_array a = {.dtype = cases[i].dt,
				.ndim = 1,
				.shape = {cases[i].n},
				.data = cases[i].data,
				.nbytes = cases[i].bytes},
			   b;
		path_in_dir(pin, sizeof(pin), "cin.npy");
		path_in_dir(pout, sizeof(pout), "cout.npy");
		ck_assert_msg(gpud_npy_save(pin, &a, err, sizeof(err)) == 0, "%s", err);
		ctl_result *r = CTL("upload", "--keep", pin);
		assert_ctl_ok(r);
		char handle[64];
		snprintf(handle, sizeof(handle), "%.*s", (int)strcspn(r->out, "\n"), r->out);
		assert_ctl_ok(CTL("download", handle, "-o", pout));
		ck_assert_msg(gpud_npy_load(pout, &b, err, sizeof(err)) == 0, "%s", err);
		ck_assert_int_eq(b.dtype, cases[i].dt);
		ck_assert_uint_eq(b.shape[0], cases[i].n);
		ck_assert_mem_eq(b.data, cases[i].data, cases[i].bytes);
		gpud_array_free(&b);
		snprintf(arg, sizeof(arg), "x=%s", pin);
		CTL_FAIL(EX_DATAERR, gpud_dtype_name(cases[i].dt), "run", "sum", arg);
		assert_ctl_ok(CTL("free", handle));
	}
}
END_TEST

/* histogram through gpuctl: numpy's counts, int64; bad arguments named. */
START_TEST(test_gpuctl_histogram)
{
	char px[700], pi[700], po[700], ax[720], ai[720], err[512];
	double x[9] = {0, 0.25, 0.5, 1, 1.5, 2, -1, 2.5, NAN};
	double xi[6] = {0, 1, 2, 3, 4, 5};
	path_in_dir(px, sizeof(px), "hx.npy");
	path_in_dir(pi, sizeof(pi), "hi.npy");
	path_in_dir(po, sizeof(po), "hcounts.npy");
	save_vec(px, GPUD_F32, x, 9);
	save_vec(pi, GPUD_I32, xi, 6);
	snprintf(ax, sizeof(ax), "x=%s", px);
	snprintf(ai, sizeof(ai), "x=%s", pi);

	/* edges 0, .5, 1, 1.5, 2: the last bin closed; -1, 2.5 and NaN dropped */
	ctl_result *r = CTL("run", "histogram", ax, "bins=4", "range_min=0", "range_max=2", "-o",
			    po);
	assert_ctl_ok(r);
	ck_assert_msg(r->err[0] == '\0', "'%s' wrote to stderr: %s", r->cmd, r->err);
	gpud_array c;
	ck_assert_msg(gpud_npy_load(po, &c, err, sizeof(err)) == 0, "%s", err);
	ck_assert_int_eq(c.dtype, GPUD_I64);
	ck_assert_int_eq(c.ndim, 1);
	ck_assert_uint_eq(c.shape[0], 4);
	const int64_t want[4] = {2, 1, 1, 2};
	for (int i = 0; i < 4; i++)
		ck_assert_msg(((int64_t *)c.data)[i] == want[i], "counts[%d] = %lld, want %lld", i,
			      (long long)((int64_t *)c.data)[i], (long long)want[i]);
	gpud_array_free(&c);
	/* integers; range_max given as a float */
	assert_ctl_ok(
		CTL("run", "histogram", ai, "bins=5", "range_min=0", "range_max=5.0", "-o", po));
	ck_assert_msg(gpud_npy_load(po, &c, err, sizeof(err)) == 0, "%s", err);
	const int64_t wanti[5] = {1, 1, 1, 1, 2};
	for (int i = 0; i < 5; i++)
		ck_assert_msg(((int64_t *)c.data)[i] == wanti[i], "int counts[%d] = %lld", i,
			      (long long)((int64_t *)c.data)[i]);
	gpud_array_free(&c);
	/* without -o: the summary; bins defaults to 10 */
	r = CTL("run", "histogram", ax, "range_min=0", "range_max=2");
	assert_ctl_ok(r);
	ck_assert_msg(strstr(r->out, "counts: int64 (10,) [") != NULL, "summary: '%s'", r->out);

	CTL_FAIL(EX_DATAERR, "argument 'bins' must be at least 1, got 0", "run", "histogram", ax,
		 "bins=0", "range_min=0", "range_max=1");
	CTL_FAIL(EX_DATAERR, "max must be larger than min in range parameter", "run", "histogram",
		 ax, "range_min=3", "range_max=1");
	CTL_FAIL(EX_DATAERR, "argument 'range_min' must be a finite float64, got inf", "run",
		 "histogram", ax, "range_min=inf", "range_max=1");
	CTL_FAIL(EX_DATAERR, "missing argument 'range_max'", "run", "histogram", ax, "range_min=0");
	CTL_FAIL(EX_DATAERR, "argument 'bins' must be int64, got 2.5", "run", "histogram", ax,
		 "bins=2.5", "range_min=0", "range_max=1");
	r = CTL("kernels");
	assert_ctl_ok(r);
	ck_assert_msg(strstr(r->out, "histogram") && strstr(r->out, "range_min") &&
			      strstr(r->out, "numpy.histogram"),
		      "%s", r->out);
}
END_TEST

/* matmul, uniform and normal through gpuctl (CPU BLAS / cuBLAS, cuRAND), and bad arguments. */
START_TEST(test_gpuctl_libraries)
{
	char pa[700], pbm[700], pc[700], aa[720], ab[720], err[512];
	double a[6] = {0, 1, 2, 3, 4, 5}, b[12] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11};
	double want[8] = {20, 23, 26, 29, 56, 68, 80, 92};
	uint64_t sa[2] = {2, 3}, sb[2] = {3, 4};
	path_in_dir(pa, sizeof(pa), "ma.npy");
	path_in_dir(pbm, sizeof(pbm), "mb.npy");
	path_in_dir(pc, sizeof(pc), "mc.npy");
	save_npy(pa, GPUD_F64, 2, sa, a);
	save_npy(pbm, GPUD_F64, 2, sb, b);
	snprintf(aa, sizeof(aa), "a=%s", pa);
	snprintf(ab, sizeof(ab), "b=%s", pbm);
	assert_ctl_ok(CTL("run", "matmul", aa, ab, "-o", pc));
	gpud_array c;
	ck_assert_msg(gpud_npy_load(pc, &c, err, sizeof(err)) == 0, "%s", err);
	ck_assert_int_eq(c.ndim, 2);
	ck_assert(c.shape[0] == 2 && c.shape[1] == 4 && c.dtype == GPUD_F64);
	for (int i = 0; i < 8; i++)
		ck_assert_msg(((double *)c.data)[i] == want[i], "c[%d] = %g", i,
			      ((double *)c.data)[i]);
	gpud_array_free(&c);
	/* b . a: b has 3 columns, a 2 rows */
	snprintf(aa, sizeof(aa), "a=%s", pbm);
	snprintf(ab, sizeof(ab), "b=%s", pa);
	CTL_FAIL(EX_DATAERR, "matmul: b has 2 rows, expected 4 (a's columns)", "run", "matmul", aa,
		 ab);
	CTL_FAIL(EX_DATAERR, "matmul: missing argument 'b'", "run", "matmul", aa);
	snprintf(aa, sizeof(aa), "a=%s", pa);
	snprintf(ab, sizeof(ab), "b=%s", pbm);
	CTL_FAIL(EX_DATAERR, "matmul: tf32 applies to float32 only; a and b are float64", "run",
		 "matmul", aa, ab, "tf32=true");

	/* uniform: cuRAND's numbers for seed 42, the same on both backends, bit for bit */
	static const float u32_42[5] = {0x1.39d5ep-1, 0x1.dfd524p-2, 0x1.2bf50ap-4, 0x1.5d0adp-2,
					0x1.499bb4p-7};
	assert_ctl_ok(CTL("run", "uniform", "n=5", "seed=42", "dtype=float32", "-o", pc));
	ck_assert_msg(gpud_npy_load(pc, &c, err, sizeof(err)) == 0, "%s", err);
	ck_assert(c.ndim == 1 && c.shape[0] == 5 && c.dtype == GPUD_F32);
	ck_assert_msg(memcmp(c.data, u32_42, sizeof(u32_42)) == 0, "uniform: %a %a ...",
		      ((float *)c.data)[0], ((float *)c.data)[1]);
	gpud_array_free(&c);
	assert_ctl_ok(CTL("run", "uniform", "n=1000", "seed=3", "low=-1", "high=1", "-o", pc));
	ck_assert_msg(gpud_npy_load(pc, &c, err, sizeof(err)) == 0, "%s", err);
	ck_assert(c.dtype == GPUD_F64 && c.shape[0] == 1000);
	for (int i = 0; i < 1000; i++)
		ck_assert(((double *)c.data)[i] > -1 && ((double *)c.data)[i] <= 1);
	gpud_array_free(&c);
	/* normal, odd n: cuRAND's numbers (the device's Box-Muller may differ in the last bits) */
	static const double n64_42[7] = {0x1.0938d6e3710a3p+0,  -0x1.54abf38e526c1p-1,
					 0x1.b1706d3b4c821p-2,  -0x1.6f13555a03774p+0,
					 -0x1.f9be3fcfaa932p+0, -0x1.f19db84702aa2p-2,
					 0x1.08add93cd83fp-3};
	assert_ctl_ok(CTL("run", "normal", "n=7", "seed=42", "-o", pc));
	ck_assert_msg(gpud_npy_load(pc, &c, err, sizeof(err)) == 0, "%s", err);
	ck_assert(c.ndim == 1 && c.shape[0] == 7 && c.dtype == GPUD_F64);
	for (int i = 0; i < 7; i++)
		ck_assert_msg(fabs(((double *)c.data)[i] - n64_42[i]) <= 1e-13 * fabs(n64_42[i]),
			      "normal[%d] = %a, want %a", i, ((double *)c.data)[i], n64_42[i]);
	gpud_array_free(&c);
	CTL_FAIL(EX_DATAERR,
		 "normal: argument 'dtype' must be a dtype name float32|float64 (default "
		 "float64), got 'float16'",
		 "run", "normal", "n=7", "seed=1", "dtype=float16");
	CTL_FAIL(EX_DATAERR, "uniform: argument 'n' must be 0 or more, got -3", "run", "uniform",
		 "n=-3", "seed=1");
	CTL_FAIL(EX_DATAERR, "normal: argument 'stddev' must be 0 or more, got -2", "run", "normal",
		 "n=3", "seed=1", "stddev=-2");
	CTL_FAIL(EX_DATAERR, "uniform: missing argument 'seed' (int64 scalar)", "run", "uniform",
		 "n=3");
	CTL_FAIL(EX_DATAERR, "uniform: argument 'seed' must be int64; cannot parse 'lucky'", "run",
		 "uniform", "n=3", "seed=lucky");
	ctl_result *r = CTL("kernels");
	assert_ctl_ok(r);
	ck_assert_msg(strstr(r->out, "dtype name float32|float64 (default float64)"), "%s", r->out);
}
END_TEST

/* gpud whose libraries cannot be loaded: it serves the rest, and says why for these. */
static void setup_no_libraries(void)
{
	static const char *const env[] = {"GPUD_BLAS=/nonexistent/libopenblas.so.0",
					  "GPUD_CUBLAS=/nonexistent/libcublas.so.13",
					  "GPUD_CURAND=/nonexistent/libcurand.so.10", NULL};
	start_gpud(NULL, NULL, env);
}

START_TEST(test_libraries_missing)
{
	char pa[700], aa[720], ab[720];
	double a[4] = {1, 2, 3, 4};
	uint64_t sa[2] = {2, 2};
	int cuda = strcmp(expected_backend(), "cuda") == 0;
	path_in_dir(pa, sizeof(pa), "ma.npy");
	save_npy(pa, GPUD_F64, 2, sa, a);
	snprintf(aa, sizeof(aa), "a=%s", pa);
	snprintf(ab, sizeof(ab), "b=%s", pa);
	CTL_FAIL(EX_SOFTWARE,
		 cuda ? "matmul is unavailable on the cuda backend: cuBLAS could not be loaded"
		      : "matmul is unavailable on the cpu backend: the CPU BLAS",
		 "run", "matmul", aa, ab);
	CTL_FAIL(EX_SOFTWARE,
		 cuda ? "$GPUD_CUBLAS (/nonexistent/libcublas.so.13)"
		      : "$GPUD_BLAS "
			"(/nonexistent/libopenblas.so.0)",
		 "run", "matmul", aa, ab);
	CTL_FAIL(EX_SOFTWARE, "cannot open shared object file", "run", "matmul", aa, ab);
	CTL_FAIL(EX_SOFTWARE, "unavailable on the", "run", "uniform", "n=4", "seed=1");
	CTL_FAIL(EX_SOFTWARE, "$GPUD_CURAND (/nonexistent/libcurand.so.10)", "run", "normal", "n=4",
		 "seed=1");
	/* the arguments are still checked first */
	CTL_FAIL(EX_DATAERR, "normal: argument 'n' must be 0 or more", "run", "normal", "n=-4",
		 "seed=1");
	/* everything else works */
	snprintf(ab, sizeof(ab), "y=%s", pa);
	snprintf(aa, sizeof(aa), "x=%s", pa);
	assert_ctl_ok(CTL("run", "add", aa, ab));
	static char log[65536];
	harness_read_text(e2e_gpud.log, log, sizeof(log));
	ck_assert_msg(strstr(log, "matmul is unavailable") && strstr(log, "GPUD_CURAND"),
		      "the log does not say what is unavailable:\n%s", log);
}
END_TEST

START_TEST(test_gpuctl_kernels_and_status)
{
	ctl_result *r = CTL("kernels");
	assert_ctl_ok(r);
	ck_assert_msg(strstr(r->out, "lombscargle") && strstr(r->out, "freqs") &&
			      strstr(r->out, "pgram") && strstr(r->out, "normalize"),
		      "kernels output: '%s'", r->out);

	r = CTL("status");
	assert_ctl_ok(r);
	ck_assert_msg(strstr(r->out, "backend") != NULL, "status output: '%s'", r->out);
	ck_assert_msg(strstr(r->out, e2e_gpud.url) != NULL, "status does not show the URL: '%s'",
		      r->out);
	if (!strcmp(expected_backend(), "cpu") || !strcmp(expected_backend(), "cuda")) {
		char line[64];
		snprintf(line, sizeof(line), "backend      %s", expected_backend());
		ck_assert_msg(strstr(r->out, line) != NULL, "status output lacks '%s': '%s'", line,
			      r->out);
	}
	ck_assert_msg(strstr(r->out, "buffers      0") != NULL, "status output: '%s'", r->out);

	r = CTL("status", "--wait", "5");
	assert_ctl_ok(r);
	ck_assert_msg(strstr(r->out, "backend") != NULL, "status --wait output: '%s'", r->out);

	/* --url wins over GPUD_URL. */
	char bad[700];
	snprintf(bad, sizeof(bad), "ipc://%s/nobody.sock", e2e_gpud.dir);
	r = CTL_AT(bad, "--url", e2e_gpud.url, "status");
	assert_ctl_ok(r);
}
END_TEST

START_TEST(test_gpuctl_dead_url)
{
	char dead[700];
	snprintf(dead, sizeof(dead), "ipc://%s/dead.sock", e2e_gpud.dir);
	ctl_result *r = CTL_AT(dead, "status");
	ck_assert_msg(r->code == EX_UNAVAILABLE,
		      "'%s' at a dead URL exited %d, expected %d\nstderr: %s", r->cmd, r->code,
		      EX_UNAVAILABLE, r->err);
	ck_assert_msg(strncmp(r->err, "gpuctl: error: cannot connect", 29) == 0, "stderr: '%s'",
		      r->err);
	ck_assert_msg(strstr(r->err, "dead.sock") != NULL, "stderr does not name the URL: '%s'",
		      r->err);
	ck_assert_str_eq(r->out, "");

	/* --wait gives up after its time, and says so. */
	double t0 = harness_now_s();
	r = CTL_AT(dead, "status", "--wait", "0.3");
	double took = harness_now_s() - t0;
	ck_assert_int_eq(r->code, EX_UNAVAILABLE);
	ck_assert_msg(strstr(r->err, "cannot connect") && strstr(r->err, "gave up waiting"),
		      "stderr: '%s'", r->err);
	ck_assert_msg(took >= 0.25 && took < 10, "status --wait 0.3 took %.2f s", took);

	/* The daemon of this test is unaffected. */
	assert_daemon_alive("a dead URL");
}
END_TEST

START_TEST(test_gpuctl_errors)
{
	const size_t nx = 50, nf = 40;
	double x[50], y[50], f[40], sq[100];
	char p[16][700], a[16][720];
	uint64_t shape2[2] = {10, 10};

	gen_ls(4242, nx, nf, x, y, f);
	for (int i = 0; i < 100; i++)
		sq[i] = 1.0 + i;
	static const char *files[] = {"x.npy",  "y.npy",     "freqs.npy", "x32.npy",     "y49.npy",
				      "sq.npy", "trunc.npy", "text.npy",  "missing.npy", "out.npy"};
	for (int i = 0; i < 10; i++)
		path_in_dir(p[i], sizeof(p[i]), files[i]);
	save_vec(p[0], GPUD_F64, x, nx);
	save_vec(p[1], GPUD_F64, y, nx);
	save_vec(p[2], GPUD_F64, f, nf);
	save_vec(p[3], GPUD_F32, x, nx);
	save_vec(p[4], GPUD_F64, y, nx - 1);
	save_npy(p[5], GPUD_F64, 2, shape2, sq);
	save_vec(p[6], GPUD_F64, x, nx);
	struct stat sb;
	ck_assert_int_eq(stat(p[6], &sb), 0);
	ck_assert_int_eq(truncate(p[6], sb.st_size - 100), 0);
	write_text(p[7], "this is not a numpy file\n");

	snprintf(a[0], sizeof(a[0]), "x=%s", p[0]);
	snprintf(a[1], sizeof(a[1]), "y=%s", p[1]);
	snprintf(a[2], sizeof(a[2]), "freqs=%s", p[2]);
	snprintf(a[3], sizeof(a[3]), "x=%s", p[3]);
	snprintf(a[4], sizeof(a[4]), "y=%s", p[4]);
	snprintf(a[5], sizeof(a[5]), "x=%s", p[5]);
	snprintf(a[6], sizeof(a[6]), "x=%s", p[6]);
	snprintf(a[7], sizeof(a[7]), "x=%s", p[7]);
	snprintf(a[8], sizeof(a[8]), "x=%s", p[8]);
	snprintf(a[9], sizeof(a[9]), "nosuch=%s", p[9]);
	snprintf(a[10], sizeof(a[10]), "z=%s", p[0]);

	/* Sanity: the good arguments work. */
	assert_ctl_ok(CTL("run", "lombscargle", a[0], a[1], a[2]));

	CTL_FAIL(EX_DATAERR, "unknown kernel 'lombscargel'", "run", "lombscargel", a[0], a[1],
		 a[2]);
	CTL_FAIL(EX_DATAERR, "missing argument 'freqs'", "run", "lombscargle", a[0], a[1]);
	CTL_FAIL(EX_DATAERR, "unknown argument 'z'", "run", "lombscargle", a[0], a[1], a[2], a[10]);
	CTL_FAIL(EX_DATAERR, "same length", "run", "lombscargle", a[0], a[4], a[2]);
	CTL_FAIL(EX_DATAERR, "one dtype", "run", "lombscargle", a[3], a[1], a[2]);
	CTL_FAIL(EX_DATAERR, "must be 1-d", "run", "lombscargle", a[5], a[1], a[2]);
	CTL_FAIL(EX_NOINPUT, "No such file", "run", "lombscargle", a[8], a[1], a[2]);
	CTL_FAIL(EX_DATAERR, "truncated", "run", "lombscargle", a[6], a[1], a[2]);
	CTL_FAIL(EX_DATAERR, "not a .npy", "run", "lombscargle", a[7], a[1], a[2]);
	CTL_FAIL(EX_DATAERR, "cannot parse 'maybe'", "run", "lombscargle", a[0], a[1], a[2],
		 "precenter=maybe");
	CTL_FAIL(EX_DATAERR, "must be bool", "run", "lombscargle", a[0], a[1], a[2], "precenter=2");
	CTL_FAIL(EX_DATAERR, "must be bool", "run", "lombscargle", a[0], a[1], a[2],
		 "normalize=0.5");
	CTL_FAIL(EX_USAGE, "has no output 'nosuch'", "run", "lombscargle", a[0], a[1], a[2], "-o",
		 a[9]);
	ck_assert_msg(access(p[9], F_OK) != 0, "%s was written despite the error", p[9]);
	/* Usage errors exit EX_USAGE. */
	CTL_FAIL(EX_USAGE, "given twice", "run", "lombscargle", a[0], a[0], a[1], a[2]);
	CTL_FAIL(EX_USAGE, "unknown command", "frobnicate");
	CTL_FAIL(EX_USAGE, "missing KERNEL", "run");

	/* None of the failures left buffers behind (gpuctl exits; its connection closes). */
	gpud_client *c = lib_connect();
	gpud_daemon_status s = wait_no_buffers(c, 2.0);
	ck_assert_msg(s.buffers == 0 && s.bytes_in_use == 0,
		      "after the failed runs: %" PRIu64 " buffers, %" PRIu64 " bytes", s.buffers,
		      s.bytes_in_use);
	gpud_close(c);
}
END_TEST

TCase *e2e_gpuctl(void)
{
	TCase *tc = tcase_create("gpuctl");
	tcase_add_checked_fixture(tc, setup_default, gpud_teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_gpuctl_run_writes_output);
	tcase_add_test(tc, test_gpuctl_kernels_and_status);
	tcase_add_test(tc, test_gpuctl_elementwise);
	tcase_add_test(tc, test_gpuctl_histogram);
	tcase_add_test(tc, test_gpuctl_complex);
	tcase_add_test(tc, test_gpuctl_libraries);
	tcase_add_test(tc, test_gpuctl_dead_url);
	tcase_add_test(tc, test_gpuctl_errors);
	return tc;
}

TCase *e2e_no_libraries(void)
{
	TCase *tc = tcase_create("no libraries");
	tcase_add_checked_fixture(tc, setup_no_libraries, gpud_teardown);
	tcase_add_test(tc, test_libraries_missing);
	return tc;
}
