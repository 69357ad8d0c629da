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
#include <time.h>
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
	gpud_daemon_status s = wait_no_buffers(c, E2E_SAFETY_S);
	ck_assert_uint_eq(s.buffers, 0);
	gpud_close(c);
}
END_TEST

/* lombscargle_many method=nufft through gpuctl: each row within eps of the
 * direct method's on fresh random series; eps given; the refusal of freqs;
 * the kernel's help says both. */
START_TEST(test_gpuctl_many_nufft)
{
	const size_t t = 300, nb = 3, nf = 2000;
	double x[300], y[300], f[300], off[4] = {0, 40, 150, 300};
	char px[700], py[700], po[700], pd[700], pf[700], err[512];
	char ax[720], ay[720], ao[720], af[720];
	gen_ls((uint64_t)time(NULL) ^ 0x6d616e79ull, t, t, x, y, f);
	path_in_dir(px, sizeof(px), "mx.npy");
	path_in_dir(py, sizeof(py), "my.npy");
	path_in_dir(po, sizeof(po), "moff.npy");
	path_in_dir(pd, sizeof(pd), "mout.npy");
	path_in_dir(pf, sizeof(pf), "mf.npy");
	save_vec(px, GPUD_F64, x, t);
	save_vec(py, GPUD_F64, y, t);
	save_vec(po, GPUD_I64, off, nb + 1);
	save_vec(pf, GPUD_F64, f, 10);
	snprintf(ax, sizeof(ax), "x=%s", px);
	snprintf(ay, sizeof(ay), "y=%s", py);
	snprintf(ao, sizeof(ao), "offsets=%s", po);
	snprintf(af, sizeof(af), "freqs=%s", pf);
	gpud_array a[2];
	static const char *const methods[] = {"method=direct", "method=nufft"};
	for (int m = 0; m < 2; m++) {
		unlink(pd);
		assert_ctl_ok(CTL("run", "lombscargle_many", ax, ay, ao, "f0=0.05", "df=0.004",
				  "nf=2000", "normalize=normalize", "floating_mean=true",
				  methods[m], "eps=1e-10", "-o", pd));
		ck_assert_msg(gpud_npy_load(pd, &a[m], err, sizeof(err)) == 0, "%s", err);
		ck_assert_int_eq(a[m].ndim, 2);
		ck_assert_uint_eq(a[m].shape[0], nb);
		ck_assert_uint_eq(a[m].shape[1], nf);
	}
	const double *d = a[0].data, *n = a[1].data;
	for (size_t b = 0; b < nb; b++) {
		double mx = 0, e = 0;
		for (size_t k = b * nf; k < (b + 1) * nf; k++) {
			ck_assert(isfinite(n[k]));
			mx = fabs(d[k]) > mx ? fabs(d[k]) : mx;
			e = fabs(n[k] - d[k]) > e ? fabs(n[k] - d[k]) : e;
		}
		ck_assert_msg(mx > 0 && e <= 1e-10 * mx, "series %zu: nufft off by %.3g of %.3g", b,
			      e, mx);
	}
	gpud_array_free(&a[0]);
	gpud_array_free(&a[1]);
	CTL_FAIL(EX_DATAERR,
		 "lombscargle_many: method=nufft needs the uniform grid f0, df, nf; got the array "
		 "freqs",
		 "run", "lombscargle_many", ax, ay, ao, af, "method=nufft");
	CTL_FAIL(EX_DATAERR, "lombscargle_many: eps must be between 1e-14 and 0.1 for float64",
		 "run", "lombscargle_many", ax, ay, ao, "f0=0.05", "df=0.004", "nf=20",
		 "method=nufft", "eps=1");
	ctl_result *r = CTL("kernels");
	assert_ctl_ok(r);
	ck_assert_msg(strstr(r->out, "eps") && strstr(r->out, "nufft: the grid"),
		      "kernels lombscargle_many: '%s'", r->out);
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
	CTL_FAIL(EX_DATAERR, "uniform: argument 'seed' must be an int64, got the text 'lucky'",
		 "run", "uniform", "n=3", "seed=lucky");
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
	/* a device line: the cpu backend's its worker threads, a CUDA device's its SMs */
	if (!strcmp(expected_backend(), "cpu"))
		ck_assert_msg(strstr(r->out, "cpu (host memory), ") &&
				      strstr(r->out, " worker thread") && !strstr(r->out, "sm_"),
			      "status's cpu device line: '%s'", r->out);
	else if (!strcmp(expected_backend(), "cuda"))
		ck_assert_msg(strstr(r->out, " (sm_") && strstr(r->out, " SMs), ") &&
				      !strstr(r->out, "sm_00"),
			      "status's cuda device line: '%s'", r->out);

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
	CTL_FAIL(EX_DATAERR,
		 "lombscargle: missing the frequencies: give freqs (an array) or the grid f0, df, "
		 "nf",
		 "run", "lombscargle", a[0], a[1]);
	CTL_FAIL(EX_DATAERR, "unknown argument 'z'", "run", "lombscargle", a[0], a[1], a[2], a[10]);
	CTL_FAIL(EX_DATAERR, "same length", "run", "lombscargle", a[0], a[4], a[2]);
	CTL_FAIL(EX_DATAERR, "one dtype", "run", "lombscargle", a[3], a[1], a[2]);
	CTL_FAIL(EX_DATAERR, "must be 1-d", "run", "lombscargle", a[5], a[1], a[2]);
	CTL_FAIL(EX_NOINPUT, "No such file", "run", "lombscargle", a[8], a[1], a[2]);
	CTL_FAIL(EX_DATAERR, "truncated", "run", "lombscargle", a[6], a[1], a[2]);
	CTL_FAIL(EX_DATAERR, "not a .npy", "run", "lombscargle", a[7], a[1], a[2]);
	CTL_FAIL(EX_DATAERR, "must be a bool, got the text 'maybe'", "run", "lombscargle", a[0],
		 a[1], a[2], "precenter=maybe");
	CTL_FAIL(EX_DATAERR, "must be bool", "run", "lombscargle", a[0], a[1], a[2], "precenter=2");
	CTL_FAIL(EX_DATAERR, "argument 'normalize' must be one of", "run", "lombscargle", a[0],
		 a[1], a[2], "normalize=0.5");
	CTL_FAIL(EX_USAGE, "has no output 'nosuch'", "run", "lombscargle", a[0], a[1], a[2], "-o",
		 a[9]);
	ck_assert_msg(access(p[9], F_OK) != 0, "%s was written despite the error", p[9]);
	/* Usage errors exit EX_USAGE. */
	CTL_FAIL(EX_USAGE, "given twice", "run", "lombscargle", a[0], a[0], a[1], a[2]);
	CTL_FAIL(EX_USAGE, "unknown command", "frobnicate");
	CTL_FAIL(EX_USAGE, "missing KERNEL", "run");

	/* None of the failures left buffers behind (gpuctl exits; its connection closes). */
	assert_no_buffers_left("the failed runs");
}
END_TEST

/* The value of component j of a .npy of complex dtype dt (its float components). */
static double component_at(const gpud_array *a, size_t j)
{
	return a->dtype == GPUD_C64 ? (double)((const float *)a->data)[j]
				    : ((const double *)a->data)[j];
}

/* The .npy header's dtype ('descr'), e.g. "<c16", of the file at path. */
static void npy_descr(const char *path, char *out, size_t len)
{
	char head[256] = "";
	FILE *fp = fopen(path, "rb");
	ck_assert_msg(fp != NULL, "cannot open %s", path);
	size_t n = fread(head, 1, sizeof(head) - 1, fp);
	fclose(fp);
	head[n] = '\0';
	for (size_t i = 0; i < n; i++) /* the magic has a NUL-free prefix; the rest is text */
		if (head[i] == '\0')
			head[i] = ' ';
	const char *d = strstr(head, "'descr': '");
	ck_assert_msg(d != NULL, "%s: no descr in the header", path);
	d += 10;
	snprintf(out, len, "%.*s", (int)strcspn(d, "'"), d);
}

/*
 * normalize=amplitude written with -o: complex128 for float64 inputs
 * (complex64 for float32), as numpy writes them. x = [0, pi/4], y = [1, 0]
 * on the grid f0 = 1, df = 1, nf = 2: at f = 1 the fit A cos x + B sin x
 * through (0, 1) and (pi/4, 0) is A = 1, B = -1; at f = 2 the phases are
 * 0 and pi/2, A = 1, B = 0: [1 - 1j, 1 + 0j]. The array [1, 2] gives the same.
 */
START_TEST(test_gpuctl_amplitude)
{
	static const gpud_dtype dts[] = {GPUD_F64, GPUD_F32};
	static const char *const descr[] = {"<c16", "<c8"};
	const double x[2] = {0, M_PI / 4}, y[2] = {1, 0}, f[2] = {1, 2};
	const double want[4] = {1, -1, 1, 0};
	char po[700], po2[700], ax[720], ay[720], af[720], err[512];

	path_in_dir(po, sizeof(po), "amp.npy");
	path_in_dir(po2, sizeof(po2), "amp_array.npy");
	for (int d = 0; d < 2; d++) {
		gpud_dtype dt = dts[d];
		double tol = dt == GPUD_F64 ? 1e-12 : 1e-6;
		npy_arg(ax, sizeof(ax), "x", d ? "ax32.npy" : "ax.npy", dt, x, 2);
		npy_arg(ay, sizeof(ay), "y", d ? "ay32.npy" : "ay.npy", dt, y, 2);
		npy_arg(af, sizeof(af), "freqs", d ? "af32.npy" : "af.npy", dt, f, 2);
		ctl_result *r = CTL("run", "lombscargle", ax, ay, "f0=1", "df=1", "nf=2",
				    "normalize=amplitude", "-o", po);
		assert_ctl_ok(r);
		ck_assert_msg(r->err[0] == '\0', "'%s' wrote to stderr: %s", r->cmd, r->err);
		char dsc[32];
		npy_descr(po, dsc, sizeof(dsc));
		ck_assert_str_eq(dsc, descr[d]);
		gpud_array a;
		ck_assert_msg(gpud_npy_load(po, &a, err, sizeof(err)) == 0, "%s", err);
		ck_assert_int_eq(a.dtype, dt == GPUD_F64 ? GPUD_C128 : GPUD_C64);
		ck_assert_int_eq(a.ndim, 1);
		ck_assert_uint_eq(a.shape[0], 2);
		for (size_t j = 0; j < 4; j++)
			ck_assert_msg(fabs(component_at(&a, j) - want[j]) <= tol,
				      "%s amplitude component %zu: got %.17g, want %g",
				      gpud_dtype_name(dt), j, component_at(&a, j), want[j]);
		/* the same as an array of frequencies (for float32 too: 1 and 2 are exact) */
		assert_ctl_ok(
			CTL("run", "lombscargle", ax, ay, af, "normalize=amplitude", "-o", po2));
		gpud_array b;
		ck_assert_msg(gpud_npy_load(po2, &b, err, sizeof(err)) == 0, "%s", err);
		ck_assert_int_eq(b.dtype, a.dtype);
		for (size_t j = 0; j < 4; j++)
			ck_assert_msg(fabs(component_at(&a, j) - component_at(&b, j)) <= tol,
				      "%s: grid and array differ at component %zu",
				      gpud_dtype_name(dt), j);
		gpud_array_free(&a);
		gpud_array_free(&b);
	}
	/* without -o: the summary, numpy's way of writing complex numbers */
	ctl_result *r = CTL("run", "lombscargle", ax, ay, "f0=1", "df=1", "nf=2",
			    "normalize=amplitude");
	assert_ctl_ok(r);
	/* (x is float32 here: pi/4 rounded, so the parts are near 1 and -1, not equal) */
	const char *sum = strstr(r->out, "pgram: complex64 (2,) [(");
	ck_assert_msg(sum != NULL, "summary: '%s'", r->out);
	double re0, im0, re1, im1;
	char close[3] = "";
	ck_assert_msg(sscanf(sum + strlen("pgram: complex64 (2,) [("), "%lf%lfj), (%lf%lfj%2[)]]",
			     &re0, &im0, &re1, &im1, close) == 5,
		      "summary is not numpy's (a+bj), (c+dj)]: '%s'", r->out);
	ck_assert_msg(fabs(re0 - 1) < 1e-5 && fabs(im0 + 1) < 1e-5 && fabs(re1 - 1) < 1e-5 &&
			      fabs(im1) < 1e-5,
		      "summary's values: '%s'", r->out);
}
END_TEST

/*
 * The grid f0 + df k is the array of those frequencies (computed in
 * float64): the same periodogram, in every mode, from gpuctl; on the cpu
 * backend the same bits.
 */
START_TEST(test_gpuctl_grid_equals_array)
{
	static const char *const words[] = {"power", "normalize", "amplitude"};
	const size_t nx = 64, nf = 500;
	const double f0 = 0.05, df = 0.0199;
	double x[64], y[64], f[500], w[64];
	char pg[700], pa[700], ax[720], ay[720], af[720], aw[720], a0[64], a1[64], an[64], err[512];
	int cpu = strcmp(expected_backend(), "cpu") == 0;

	gen_ls(9090, nx, nf, x, y, f);
	for (size_t i = 0; i < nf; i++)
		f[i] = f0 + df * (double)i;
	for (size_t j = 0; j < nx; j++)
		w[j] = 0.5 + (double)(j % 5) / 4;
	path_in_dir(pg, sizeof(pg), "grid.npy");
	path_in_dir(pa, sizeof(pa), "array.npy");
	npy_arg(ax, sizeof(ax), "x", "gx.npy", GPUD_F64, x, nx);
	npy_arg(ay, sizeof(ay), "y", "gy.npy", GPUD_F64, y, nx);
	npy_arg(af, sizeof(af), "freqs", "gf.npy", GPUD_F64, f, nf);
	npy_arg(aw, sizeof(aw), "weights", "gw.npy", GPUD_F64, w, nx);
	snprintf(a0, sizeof(a0), "f0=%.17g", f0);
	snprintf(a1, sizeof(a1), "df=%.17g", df);
	snprintf(an, sizeof(an), "nf=%zu", nf);
	for (int combo = 0; combo < 6; combo++) {
		char nz[64], fm[64];
		snprintf(nz, sizeof(nz), "normalize=%s", words[combo % 3]);
		snprintf(fm, sizeof(fm), "floating_mean=%s", combo >= 3 ? "true" : "false");
		assert_ctl_ok(CTL("run", "lombscargle", ax, ay, aw, a0, a1, an, nz, fm, "-o", pg));
		assert_ctl_ok(CTL("run", "lombscargle", ax, ay, aw, af, nz, fm, "-o", pa));
		gpud_array g, a;
		ck_assert_msg(gpud_npy_load(pg, &g, err, sizeof(err)) == 0, "%s", err);
		ck_assert_msg(gpud_npy_load(pa, &a, err, sizeof(err)) == 0, "%s", err);
		ck_assert_int_eq(g.dtype, combo % 3 == 2 ? GPUD_C128 : GPUD_F64);
		ck_assert_int_eq(g.dtype, a.dtype);
		ck_assert_uint_eq(g.shape[0], nf);
		ck_assert_uint_eq(g.nbytes, a.nbytes);
		if (cpu) {
			ck_assert_msg(memcmp(g.data, a.data, g.nbytes) == 0,
				      "%s %s: the grid's bits differ from the array's", nz, fm);
		} else {
			size_t n = g.nbytes / sizeof(double);
			double *ref = malloc(n * sizeof(double));
			ck_assert_ptr_nonnull(ref);
			for (size_t i = 0; i < n; i++)
				ref[i] = ((double *)a.data)[i];
			assert_matches(g.data, GPUD_F64, ref, n, "the grid against the array");
			free(ref);
		}
		gpud_array_free(&g);
		gpud_array_free(&a);
	}
}
END_TEST

/*
 * Every wrong lombscargle argument of scipy >= 1.15's: gpuctl exits 65 with
 * gpud's message, which names the argument; the values of the weights are
 * found in the run (the verdict). gpud goes on serving: a good run after,
 * and nothing left behind.
 */
START_TEST(test_gpuctl_lombscargle_args)
{
	const size_t nx = 50, nf = 40;
	double x[50], y[50], f[40], w[50], ref[40];
	char p[8][700], a[8][720], err[512];
	static const char *files[] = {"x.npy",    "y.npy",     "freqs.npy",  "w.npy",
				      "wneg.npy", "wzero.npy", "wshort.npy", "out.npy"};

	gen_ls(4343, nx, nf, x, y, f);
	for (int i = 0; i < 8; i++)
		path_in_dir(p[i], sizeof(p[i]), files[i]);
	save_vec(p[0], GPUD_F64, x, nx);
	save_vec(p[1], GPUD_F64, y, nx);
	save_vec(p[2], GPUD_F64, f, nf);
	for (size_t j = 0; j < nx; j++)
		w[j] = 1 + (double)(j % 3);
	save_vec(p[3], GPUD_F64, w, nx);
	w[17] = -0.5;
	save_vec(p[4], GPUD_F64, w, nx);
	for (size_t j = 0; j < nx; j++)
		w[j] = 0;
	save_vec(p[5], GPUD_F64, w, nx);
	save_vec(p[6], GPUD_F64, w, nx - 1);
	static const char *const names[] = {"x",       "y",       "freqs",  "weights",
					    "weights", "weights", "weights"};
	for (int i = 0; i < 7; i++)
		snprintf(a[i], sizeof(a[i]), "%s=%.699s", names[i], p[i]);

	CTL_FAIL(EX_DATAERR,
		 "lombscargle: argument 'weights' must hold only non-negative values that sum to a "
		 "positive value; got a negative or NaN weight",
		 "run", "lombscargle", a[0], a[1], a[2], a[4]);
	CTL_FAIL(EX_DATAERR,
		 "lombscargle: argument 'weights' must hold only non-negative values that sum to a "
		 "positive value; got weights that sum to 0",
		 "run", "lombscargle", a[0], a[1], "f0=1", "df=0.5", "nf=8", a[5]);
	CTL_FAIL(EX_DATAERR,
		 "lombscargle: weights must have the length of x, got 49 for 50 samples", "run",
		 "lombscargle", a[0], a[1], a[2], a[6]);
	CTL_FAIL(EX_DATAERR,
		 "lombscargle: give the frequencies as freqs or as the grid f0, df, nf, not both",
		 "run", "lombscargle", a[0], a[1], a[2], "f0=1", "df=0.5", "nf=8");
	CTL_FAIL(EX_DATAERR,
		 "lombscargle: give the frequencies as freqs or as the grid f0, df, nf, not both",
		 "run", "lombscargle", a[0], a[1], a[2], "nf=8");
	CTL_FAIL(EX_DATAERR, "lombscargle: the grid needs f0, df and nf; 'nf' is missing", "run",
		 "lombscargle", a[0], a[1], "f0=1", "df=0.5");
	CTL_FAIL(EX_DATAERR, "lombscargle: the grid needs f0, df and nf; 'df' is missing", "run",
		 "lombscargle", a[0], a[1], "f0=1", "nf=8");
	CTL_FAIL(EX_DATAERR, "lombscargle: nf must be between 1 and 2^40, got 0", "run",
		 "lombscargle", a[0], a[1], "f0=1", "df=0.5", "nf=0");
	CTL_FAIL(EX_DATAERR, "lombscargle: nf must be between 1 and 2^40, got -3", "run",
		 "lombscargle", a[0], a[1], "f0=1", "df=0.5", "nf=-3");
	CTL_FAIL(EX_DATAERR, "lombscargle: argument 'nf' must be int64, got 2.5", "run",
		 "lombscargle", a[0], a[1], "f0=1", "df=0.5", "nf=2.5");
	CTL_FAIL(EX_DATAERR, "lombscargle: argument 'f0' must be a finite float64, got nan", "run",
		 "lombscargle", a[0], a[1], "f0=nan", "df=0.5", "nf=8");
	CTL_FAIL(EX_DATAERR,
		 "lombscargle: argument 'normalize' must be one of power|normalize|amplitude or "
		 "bool (default power), got 'bogus'",
		 "run", "lombscargle", a[0], a[1], a[2], "normalize=bogus");
	CTL_FAIL(EX_DATAERR,
		 "lombscargle: argument 'normalize' must be one of power|normalize|amplitude or "
		 "bool (default power), got 2",
		 "run", "lombscargle", a[0], a[1], a[2], "normalize=2");
	CTL_FAIL(EX_DATAERR,
		 "lombscargle: legacy=true (scipy <= 1.14) has no weights; leave out legacy for "
		 "today's scipy",
		 "run", "lombscargle", a[0], a[1], a[2], a[3], "legacy=true");
	CTL_FAIL(EX_DATAERR, "has no normalize=amplitude", "run", "lombscargle", a[0], a[1], a[2],
		 "normalize=amplitude", "legacy=true");
	CTL_FAIL(EX_DATAERR, "has no floating_mean=true", "run", "lombscargle", a[0], a[1], a[2],
		 "floating_mean=true", "legacy=1");
	char pe[700], ae[720];
	path_in_dir(pe, sizeof(pe), "empty.npy");
	save_vec(pe, GPUD_F64, f, 0);
	snprintf(ae, sizeof(ae), "freqs=%s", pe);
	CTL_FAIL(EX_DATAERR, "lombscargle: freqs must not be empty", "run", "lombscargle", a[0],
		 a[1], ae);

	/* gpud goes on: a good run with weights, after the failures, gives scipy's numbers */
	assert_daemon_alive("bad lombscargle arguments");
	char out[720];
	snprintf(out, sizeof(out), "pgram=%s", p[7]);
	assert_ctl_ok(CTL("run", "lombscargle", a[0], a[1], a[2], a[3], "normalize=true",
			  "precenter=true", "-o", out));
	gpud_array got;
	ck_assert_msg(gpud_npy_load(p[7], &got, err, sizeof(err)) == 0, "%s", err);
	for (size_t j = 0; j < nx; j++)
		w[j] = 1 + (double)(j % 3);
	ls_opts o = {.w = w, .precenter = 1, .normalize = 1};
	ls_ref_full(x, y, nx, f, nf, &o, ref, NULL);
	assert_matches(got.data, GPUD_F64, ref, nf, "weights, precenter, normalize=true");
	gpud_array_free(&got);
	/* legacy=true: scipy <= 1.14's precenter and normalize */
	assert_ctl_ok(CTL("run", "lombscargle", a[0], a[1], a[2], "normalize=normalize",
			  "precenter=true", "legacy=true", "-o", p[7]));
	ck_assert_msg(gpud_npy_load(p[7], &got, err, sizeof(err)) == 0, "%s", err);
	ls_opts leg = {.precenter = 1, .normalize = 1, .legacy = 1};
	ls_ref_full(x, y, nx, f, nf, &leg, ref, NULL);
	assert_matches(got.data, GPUD_F64, ref, nf, "legacy=true precenter normalize");
	gpud_array_free(&got);

	assert_no_buffers_left("the failed runs");
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
	tcase_add_test(tc, test_gpuctl_amplitude);
	tcase_add_test(tc, test_gpuctl_grid_equals_array);
	tcase_add_test(tc, test_gpuctl_lombscargle_args);
	tcase_add_test(tc, test_gpuctl_many_nufft);
	return tc;
}

TCase *e2e_no_libraries(void)
{
	TCase *tc = tcase_create("no libraries");
	tcase_add_checked_fixture(tc, setup_no_libraries, gpud_teardown);
	tcase_add_test(tc, test_libraries_missing);
	return tc;
}
