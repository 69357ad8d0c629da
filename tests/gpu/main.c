/*
 * tests/test_gpu.c — every kernel's GPU implementation against its CPU
 * reference (the cpu backend's code, linked in), through a real gpud on the
 * cuda backend. Inputs are fresh random data at several sizes (the seed is
 * printed); outputs are pre-filled with a NaN of a payload no arithmetic
 * produces, so an element the kernel never wrote is caught even where NaN is
 * a legitimate result.
 *
 * Needs a GPU: `make test-gpu`. GPUD_BIN names the daemon.
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

#include "kernels/elementwise/elementwise.h"
#include "kernels/histogram/histogram.h"
#include "kernels/core/kernel.h"
#include "kernels/matmul/matmul.h"
#include "kernels/random/random.h"
#include "kernels/reduce/reduce.h"
#include "kernels/lombscargle/lombscargle.h"

#define POISON64 0x7ff4dead0badf00dull /* a quiet NaN with a payload */
#define POISON32 0x7fa0dead

static char sockdir[64], url[128], logpath[128];
static pid_t gpud_pid;
static uint64_t rng_state;

static uint64_t rnd(void)
{
	uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static double wall(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double uniform(double lo, double hi)
{
	return lo + (hi - lo) * (double)(rnd() >> 11) / 9007199254740992.0;
}

static void start_gpud_with(const char *config_text);

/* A client that gives up after 2 minutes instead of hanging on a stuck gpud. */
static gpud_status connect_timeout(gpud_client **c)
{
	gpud_status st = gpud_connect(url, c);
	if (*c)
		gpud_set_timeout(*c, 120000);
	return st;
}

static void start_gpud(void)
{
	start_gpud_with(NULL);
}

static void start_gpud_with(const char *config_text)
{
	const char *bin = getenv("GPUD_BIN");
	ck_assert_msg(bin != NULL, "GPUD_BIN is not set");
	snprintf(sockdir, sizeof(sockdir), "/tmp/gpud-gpu-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(sockdir));
	snprintf(url, sizeof(url), "ipc://%s/gpud.sock", sockdir);
	snprintf(logpath, sizeof(logpath), "%s/gpud.log", sockdir);
	char confpath[128];
	snprintf(confpath, sizeof(confpath), "%s/gpud.conf", sockdir);
	if (config_text) {
		FILE *f = fopen(confpath, "w");
		ck_assert_ptr_nonnull(f);
		fputs(config_text, f);
		fclose(f);
	}
	gpud_pid = fork();
	ck_assert_int_ge(gpud_pid, 0);
	if (gpud_pid == 0) {
		if (freopen(logpath, "w", stderr) == NULL)
			_exit(127);
		if (config_text)
			execl(bin, bin, "--listen", url, "--backend", "cuda", "--config", confpath,
			      (char *)NULL);
		else
			execl(bin, bin, "--listen", url, "--backend", "cuda", (char *)NULL);
		_exit(127);
	}
	for (int i = 0; i < 600; i++) { /* context creation and warm-up: up to 30 s */
		gpud_client *c;
		if (gpud_connect(url, &c) == GPUD_OK) {
			gpud_close(c);
			return;
		}
		gpud_close(c);
		int st;
		if (waitpid(gpud_pid, &st, WNOHANG) == gpud_pid) {
			char cmd[256];
			snprintf(cmd, sizeof(cmd), "cat %s >&2", logpath);
			if (system(cmd) != 0)
				fprintf(stderr, "(no log)\n");
			ck_abort_msg("gpud --backend cuda exited at start (status %d)", st);
		}
		usleep(50000);
	}
	ck_abort_msg("gpud did not answer within 30 s");
}

static void stop_gpud(void)
{
	int st = -1;
	kill(gpud_pid, SIGTERM);
	for (int i = 0; i < 200 && waitpid(gpud_pid, &st, WNOHANG) == 0; i++)
		usleep(50000);
	char cmd[256];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", sockdir);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", sockdir);
	ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "gpud did not exit 0 (status %d)", st);
}

/* --- lombscargle ------------------------------------------------------------------ */

typedef struct ls_case {
	size_t nx, nf;
	gpud_dtype dt;
	int precenter, normalize;
} ls_case;

static void *make_array(gpud_dtype dt, size_t n, double lo, double hi, int sorted)
{
	size_t es = gpud_dtype_size(dt);
	void *p = malloc(n * es + 8);
	double prev = lo;
	for (size_t i = 0; i < n; i++) {
		double v = uniform(lo, hi);
		if (sorted) { /* increasing, irregular sample times */
			v = prev + uniform(0.0, 2.0 * (hi - lo) / (double)n);
			prev = v;
		}
		if (v == 0)
			v = 0.5;
		if (dt == GPUD_F32)
			((float *)p)[i] = (float)v;
		else
			((double *)p)[i] = v;
	}
	return p;
}

static double get(gpud_dtype dt, const void *p, size_t i)
{
	return dt == GPUD_F32 ? (double)((const float *)p)[i] : ((const double *)p)[i];
}

static int is_poison(gpud_dtype dt, const void *p, size_t i)
{
	if (gpud_dtype_size(dt) == 4) {
		uint32_t u;
		memcpy(&u, (const char *)p + 4 * i, 4);
		return u == POISON32;
	}
	uint64_t u;
	memcpy(&u, (const char *)p + 8 * i, 8);
	return u == POISON64;
}

static void poison(gpud_dtype dt, void *p, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (gpud_dtype_size(dt) == 4) { /* float32 NaN; for int32 an unlikely value */
			uint32_t u = POISON32;
			memcpy((char *)p + 4 * i, &u, 4);
		} else {
			uint64_t u = POISON64;
			memcpy((char *)p + 8 * i, &u, 8);
		}
	}
}

/* The CPU reference: the kernel table's own cpu_run. */
static void reference(const ls_case *cs, void *x, void *y, void *f, void *out)
{
	const kernel_def *k = kernel_find("lombscargle");
	kernel_args a;
	char err[256];
	memset(&a, 0, sizeof(a));
	a.kernel = k;
	kernel_array arr = {.dtype = cs->dt, .ndim = 1};
	void *ptrs[3] = {x, y, f};
	size_t lens[3] = {cs->nx, cs->nx, cs->nf};
	for (int i = 0; i < 3; i++) {
		arr.shape[0] = lens[i];
		arr.count = lens[i];
		arr.data = ptrs[i];
		ck_assert_int_eq(kernel_bind_array(k, &k->params[i], &arr, &a.v[i], err,
						   sizeof(err)),
				 0);
	}
	ck_assert_int_eq(kernel_bind_scalar(k, &k->params[LS_PRECENTER], KGIVEN_BOOL, cs->precenter,
					    0, 0, &a.v[LS_PRECENTER], err, sizeof(err)),
			 0);
	ck_assert_int_eq(kernel_bind_scalar(k, &k->params[LS_NORMALIZE], KGIVEN_BOOL, cs->normalize,
					    0, 0, &a.v[LS_NORMALIZE], err, sizeof(err)),
			 0);
	ck_assert_int_eq(kernel_args_finish(&a, err, sizeof(err)), 0);
	ck_assert_int_eq(k->check(&a, err, sizeof(err)), 0);
	a.v[LS_PGRAM].arr = a.v[LS_PGRAM].expect;
	a.v[LS_PGRAM].arr.data = out;
	a.v[LS_PGRAM].present = 1;
	k->cpu_run(&a, 0, cs->nf);
}

static void run_ls_case(gpud_client *c, const ls_case *cs)
{
	size_t es = gpud_dtype_size(cs->dt);
	void *x = make_array(cs->dt, cs->nx, 0.01, 10 * M_PI, 1);
	void *y = make_array(cs->dt, cs->nx, -3.0, 3.0, 0);
	void *f = make_array(cs->dt, cs->nf, 0.01, 10.0, 0);
	void *ref = malloc(cs->nf * es + 8), *got = malloc(cs->nf * es + 8);
	uint64_t nx = cs->nx, nf = cs->nf;
	gpud_handle h[4];
	gpud_output o;
	size_t no;

	reference(cs, x, y, f, ref);
	poison(cs->dt, got, cs->nf);
	ck_assert_msg(gpud_alloc(c, cs->dt, 1, &nx, x, &h[0]) == GPUD_OK, "%s", gpud_errmsg(c));
	ck_assert_msg(gpud_alloc(c, cs->dt, 1, &nx, y, &h[1]) == GPUD_OK, "%s", gpud_errmsg(c));
	ck_assert_msg(gpud_alloc(c, cs->dt, 1, &nf, f, &h[2]) == GPUD_OK, "%s", gpud_errmsg(c));
	ck_assert_msg(gpud_alloc(c, cs->dt, 1, &nf, got, &h[3]) == GPUD_OK, "%s", gpud_errmsg(c));
	gpud_arg args[] = {gpud_arg_buffer("x", h[0]),
			   gpud_arg_buffer("y", h[1]),
			   gpud_arg_buffer("freqs", h[2]),
			   gpud_arg_buffer("pgram", h[3]),
			   gpud_arg_bool("precenter", cs->precenter),
			   gpud_arg_bool("normalize", cs->normalize)};
	ck_assert_msg(gpud_run(c, "lombscargle", args, 6, &o, 1, &no, NULL) == GPUD_OK, "%s",
		      gpud_errmsg(c));
	ck_assert_uint_eq(o.handle, h[3]);
	ck_assert_msg(gpud_download_range(c, h[3], 0, got, cs->nf * es) == GPUD_OK, "%s",
		      gpud_errmsg(c));
	ck_assert(gpud_free(c, h, 4) == GPUD_OK);

	double maxref = 0, maxerr = 0;
	size_t unwritten = 0, nan_mismatch = 0;
	for (size_t i = 0; i < cs->nf; i++) {
		double r = get(cs->dt, ref, i);
		if (isfinite(r) && fabs(r) > maxref)
			maxref = fabs(r);
	}
	for (size_t i = 0; i < cs->nf; i++) {
		if (is_poison(cs->dt, got, i)) {
			unwritten++;
			continue;
		}
		double r = get(cs->dt, ref, i), g = get(cs->dt, got, i);
		if (isfinite(r) != isfinite(g)) {
			nan_mismatch++;
			continue;
		}
		if (isfinite(r) && fabs(g - r) > maxerr)
			maxerr = fabs(g - r);
	}
	double tol = cs->dt == GPUD_F64 ? 1e-9 : 1e-4;
	printf("lombscargle %-7s nx=%-4zu nf=%-8zu precenter=%d normalize=%d  max|ref|=%-10.4g "
	       "max err/max|ref|=%.2e  unwritten=%zu\n",
	       gpud_dtype_name(cs->dt), cs->nx, cs->nf, cs->precenter, cs->normalize, maxref,
	       maxref > 0 ? maxerr / maxref : maxerr, unwritten);
	fflush(stdout);
	ck_assert_msg(unwritten == 0, "%zu of %zu outputs never written", unwritten, cs->nf);
	/*
	 * One sample: the second term of scipy's formula is 0/0 up to rounding
	 * (the periodogram of one point is ill-posed), so values are not
	 * compared there; every element must still be written.
	 */
	if (cs->nx > 1) {
		ck_assert_msg(nan_mismatch == 0, "%zu outputs finite on one side only",
			      nan_mismatch);
		ck_assert_msg(maxerr <= tol * maxref, "max abs error %.3e > %.0e x max %.4g",
			      maxerr, tol, maxref);
	}
	free(x);
	free(y);
	free(f);
	free(ref);
	free(got);
}

static void test_lombscargle(gpud_client *c)
{
	static const size_t nxs[] = {1, 7, 100};
	static const size_t nfs[] = {1, 31, 1000, 1u << 20};
	static const gpud_dtype dts[] = {GPUD_F64, GPUD_F32};
	for (int d = 0; d < 2; d++)
		for (int i = 0; i < 3; i++)
			for (int j = 0; j < 4; j++) {
				/* All four flag combinations at the largest size, one
				 * rotating combination elsewhere. */
				for (int m = 0; m < 4; m++) {
					if (nfs[j] != (1u << 20) && m != (int)((i + j) % 4))
						continue;
					ls_case cs = {nxs[i], nfs[j], dts[d], m & 1, m >> 1};
					run_ls_case(c, &cs);
				}
			}
}

static gpud_handle poisoned(gpud_client *c, gpud_dtype dt, uint64_t n);

/* --- the elementwise kernels ------------------------------------------------------------ */

static double get_any(gpud_dtype dt, const void *p, size_t i)
{
	switch (dt) {
	case GPUD_F32:
		return ((const float *)p)[i];
	case GPUD_F64:
		return ((const double *)p)[i];
	case GPUD_I32:
		return ((const int32_t *)p)[i];
	default:
		return (double)((const int64_t *)p)[i];
	}
}

/* n random elements of dt in [lo, hi) (integers: whole numbers, some large). */
static void *random_of(gpud_dtype dt, size_t n, double lo, double hi)
{
	void *p = malloc(n * gpud_dtype_size(dt) + 8);
	for (size_t i = 0; i < n; i++) {
		double v = uniform(lo, hi);
		switch (dt) {
		case GPUD_F32:
			((float *)p)[i] = (float)v;
			break;
		case GPUD_F64:
			((double *)p)[i] = v;
			break;
		case GPUD_I32: /* wide enough that sums and products wrap */
			((int32_t *)p)[i] = (int32_t)(uint32_t)rnd();
			break;
		default:
			((int64_t *)p)[i] = (int64_t)rnd();
			break;
		}
	}
	return p;
}

/* z of op for x, y (arrays, or scalars xs/ys when the array is NULL) through gpud vs
 * the kernel's CPU reference, with z poisoned first. */
static void ew_case(gpud_client *c, const char *name, gpud_dtype dt, size_t n, int xscalar,
		    int yscalar)
{
	const kernel_def *k = kernel_find(name);
	int op = ew_op_of(k);
	int ints = dt == GPUD_I32 || dt == GPUD_I64;
	double lo = op == EW_DIV || op == EW_REL_DIFF ? 0.5 : -3, hi = 3;
	void *x = random_of(dt, n, lo, hi), *y = random_of(dt, n, lo, hi);
	double xs = ints ? 7 : 1.25, ys = ints ? -3 : 0.875, av = 0.75;
	uint64_t shape = n;
	gpud_handle hx = 0, hy = 0, hz = poisoned(c, dt, n);
	gpud_arg args[4];
	int na = 0;
	if (!xscalar)
		ck_assert(gpud_alloc(c, dt, 1, &shape, x, &hx) == GPUD_OK);
	if (!yscalar)
		ck_assert(gpud_alloc(c, dt, 1, &shape, y, &hy) == GPUD_OK);
	args[na++] = xscalar ? gpud_arg_f64("x", xs) : gpud_arg_buffer("x", hx);
	args[na++] = yscalar ? gpud_arg_f64("y", ys) : gpud_arg_buffer("y", hy);
	args[na++] = gpud_arg_buffer("z", hz);
	if (op == EW_AXPY || op == EW_SAXPY_TRIG)
		args[na++] = gpud_arg_f64("a", av);
	gpud_output o;
	size_t no;
	ck_assert_msg(gpud_run(c, name, args, (size_t)na, &o, 1, &no, NULL) == GPUD_OK, "%s: %s",
		      name, gpud_errmsg(c));
	void *z = malloc(n * gpud_dtype_size(dt) + 8);
	ck_assert(gpud_download_range(c, hz, 0, z, n * gpud_dtype_size(dt)) == GPUD_OK);

	/* the CPU reference of the same kernel, on the same inputs */
	kernel_args a;
	memset(&a, 0, sizeof(a));
	a.kernel = k;
	a.dtype = dt;
	void *ref = malloc(n * gpud_dtype_size(dt) + 8);
	void *in[2] = {x, y};
	double sv[2] = {xs, ys};
	int sc[2] = {xscalar, yscalar};
	for (int i = 0; i < 2; i++) {
		a.v[i].present = 1;
		a.v[i].scalar = sc[i];
		a.v[i].s.f64 = sv[i];
		a.v[i].arr = (kernel_array){
			.dtype = dt, .ndim = 1, .shape = {n}, .count = n, .data = in[i]};
	}
	a.v[EW_Z].arr =
		(kernel_array){.dtype = dt, .ndim = 1, .shape = {n}, .count = n, .data = ref};
	a.v[EW_A].s.f64 = av;
	k->cpu_run(&a, 0, n);
	double tol = dt == GPUD_F32 ? 2e-6 : 1e-13, worst = 0;
	size_t unwritten = 0, bad = n;
	for (size_t i = 0; i < n; i++) {
		if (!ints && is_poison(dt, z, i)) {
			unwritten++;
			continue;
		}
		double g = get_any(dt, z, i), r = get_any(dt, ref, i);
		if (ints) {
			if (memcmp((char *)z + i * gpud_dtype_size(dt),
				   (char *)ref + i * gpud_dtype_size(dt),
				   gpud_dtype_size(dt)) != 0 &&
			    bad == n)
				bad = i;
			continue;
		}
		double e = fabs(g - r) / (fabs(r) > 1 ? fabs(r) : 1);
		if (!(e <= worst))
			worst = e;
	}
	ck_assert_msg(unwritten == 0, "%s %s n=%zu: %zu elements unwritten", name,
		      gpud_dtype_name(dt), n, unwritten);
	ck_assert_msg(bad == n, "%s %s n=%zu: element %zu differs from the CPU reference", name,
		      gpud_dtype_name(dt), n, bad);
	ck_assert_msg(worst <= tol, "%s %s n=%zu (x%s y%s): max rel err %.3g > %.1g", name,
		      gpud_dtype_name(dt), n, xscalar ? " scalar" : "", yscalar ? " scalar" : "",
		      worst, tol);
	if (n > 1000)
		printf("%-15s %-8s n=%-8zu x%s y%s max err/ref %.2e unwritten=0\n", name,
		       gpud_dtype_name(dt), n, xscalar ? "=scalar" : "[] ",
		       yscalar ? "=scalar" : "[] ", worst);
	gpud_handle fr[3] = {hz};
	size_t nfr = 1;
	if (!xscalar)
		fr[nfr++] = hx;
	if (!yscalar)
		fr[nfr++] = hy;
	ck_assert(gpud_free(c, fr, nfr) == GPUD_OK);
	free(x);
	free(y);
	free(z);
	free(ref);
}

static void test_ew(gpud_client *c, const char *name)
{
	const kernel_def *k = kernel_find(name);
	static const size_t ns[] = {1, 1000, (1u << 20) + 3};
	for (int dt = GPUD_F32; dt <= GPUD_I64; dt++) {
		if (!(k->params[EW_X].dtypes & KDT(dt)))
			continue;
		for (size_t i = 0; i < sizeof(ns) / sizeof(ns[0]); i++)
			ew_case(c, name, (gpud_dtype)dt, ns[i], 0, 0);
		ew_case(c, name, (gpud_dtype)dt, 4099, 1, 0);
		ew_case(c, name, (gpud_dtype)dt, 4099, 0, 1);
	}
}

#define EW_TEST(nm)                                                                                \
	static void test_ew_##nm(gpud_client *c)                                                   \
	{                                                                                          \
		test_ew(c, #nm);                                                                   \
	}
EW_TEST(add)
EW_TEST(sub)
EW_TEST(mul)
EW_TEST(div)
EW_TEST(axpy)
EW_TEST(saxpy_trig)
EW_TEST(rel_diff)
EW_TEST(sum_of_squares)

/* --- the reductions ---------------------------------------------------------------------- */

static void red_case(gpud_client *c, const char *name, gpud_dtype dt, size_t n, int with_nan)
{
	const kernel_def *k = kernel_find(name);
	int op = red_op_of(k), oi = red_out(k);
	void *x = random_of(dt, n, -2, 3), *y = random_of(dt, n, -1, 1);
	if (with_nan && n > 10)
		memcpy((char *)x + (n / 3) * gpud_dtype_size(dt),
		       dt == GPUD_F32 ? (const void *)&(float){NAN} : (const void *)&(double){NAN},
		       gpud_dtype_size(dt));
	uint64_t shape = n;
	gpud_handle hx, hy = 0;
	ck_assert(gpud_alloc(c, dt, 1, &shape, x, &hx) == GPUD_OK);
	gpud_arg args[2] = {gpud_arg_buffer("x", hx)};
	size_t na = 1;
	if (op == RED_DOT) {
		ck_assert(gpud_alloc(c, dt, 1, &shape, y, &hy) == GPUD_OK);
		args[na++] = gpud_arg_buffer("y", hy);
	}
	gpud_output o;
	size_t no;
	ck_assert_msg(gpud_run(c, name, args, na, &o, 1, &no, NULL) == GPUD_OK, "%s: %s", name,
		      gpud_errmsg(c));
	gpud_dtype odt = o.dtype;
	ck_assert_int_eq(o.ndim, 0);
	unsigned char got[8], ref[8];
	ck_assert(gpud_download_range(c, o.handle, 0, got, gpud_dtype_size(odt)) == GPUD_OK);

	kernel_args a;
	memset(&a, 0, sizeof(a));
	a.kernel = k;
	a.dtype = dt;
	a.v[0].arr = (kernel_array){.dtype = dt, .ndim = 1, .shape = {n}, .count = n, .data = x};
	a.v[1].arr = (kernel_array){.dtype = dt, .ndim = 1, .shape = {n}, .count = n, .data = y};
	a.v[oi].arr = (kernel_array){.dtype = odt, .ndim = 0, .count = 1, .data = ref};
	k->cpu_run(&a, 0, 1);
	double g = get_any(odt, got, 0), r = get_any(odt, ref, 0);
	double scale = 0; /* sum of |terms| */
	for (size_t i = 0; i < n; i++)
		scale += fabs(get_any(dt, x, i) * (op == RED_DOT ? get_any(dt, y, i) : 1));
	if (dt == GPUD_I32 || dt == GPUD_I64) {
		ck_assert_msg(memcmp(got, ref, gpud_dtype_size(odt)) == 0,
			      "%s %s n=%zu: %.17g vs %.17g", name, gpud_dtype_name(dt), n, g, r);
	} else if (r != r) {
		ck_assert_msg(g != g, "%s %s n=%zu: %g, expected NaN", name, gpud_dtype_name(dt), n,
			      g);
	} else {
		/* kernels/reduce.h: CUB's float64 tree within 1e-13 of sum|terms| at these
		 * sizes, the reference compensated; float32 results rounded once (1 ulp) */
		double tol = (dt == GPUD_F32 ? 1.2e-7 * fabs(r) : 0) +
			     1e-13 * (op == RED_MEAN ? scale / (double)n : scale);
		ck_assert_msg(fabs(g - r) <= tol,
			      "%s %s n=%zu: %.17g vs reference %.17g (tol %.3g)", name,
			      gpud_dtype_name(dt), n, g, r, tol);
	}
	if (n > 1000)
		printf("%-6s %-8s n=%-8zu%s gpu %.10g ref %.10g\n", name, gpud_dtype_name(dt), n,
		       with_nan ? " NaN" : "    ", g, r);
	gpud_handle fr[3] = {hx, o.handle, hy};
	ck_assert(gpud_free(c, fr, hy ? 3 : 2) == GPUD_OK);
	free(x);
	free(y);
}

static void test_red(gpud_client *c, const char *name)
{
	const kernel_def *k = kernel_find(name);
	static const size_t ns[] = {1, 1000, (1u << 20) + 5};
	int op = red_op_of(k);
	for (int dt = GPUD_F32; dt <= GPUD_I64; dt++) {
		if (!(k->params[0].dtypes & KDT(dt)))
			continue;
		for (size_t i = 0; i < sizeof(ns) / sizeof(ns[0]); i++)
			red_case(c, name, (gpud_dtype)dt, ns[i], 0);
		if ((op == RED_MIN || op == RED_MAX) && dt <= GPUD_F64)
			red_case(c, name, (gpud_dtype)dt, 5001, 1);
	}
}

#define RED_TEST(nm)                                                                               \
	static void test_red_##nm(gpud_client *c)                                                  \
	{                                                                                          \
		test_red(c, #nm);                                                                  \
	}
RED_TEST(sum)
RED_TEST(asum)
RED_TEST(min)
RED_TEST(max)
RED_TEST(mean)
RED_TEST(dot)

/* --- matmul (cuBLAS) ---------------------------------------------------------------------- */

/*
 * a (m x k) b (k x n) through gpud into a poisoned c, against a float64 triple
 * loop here (the GPU machine has no CPU BLAS). Per element, with S = sum over l
 * of |a_il b_lj|: float64 within (k + 2) 2^-53 S, float32 within (k + 2) 2^-24
 * S, float32 with tf32 within 2^-9 S + (k + 2) 2^-24 S (TF32 keeps 10 bits of
 * each input's mantissa: each product is off by up to about 2^-10 of itself).
 */
static void mm_case(gpud_client *c, gpud_dtype dt, int tf32, uint64_t m, uint64_t k, uint64_t n,
		    int daemon_output)
{
	size_t es = gpud_dtype_size(dt);
	void *a = random_of(dt, m * k, -1, 1), *b = random_of(dt, k * n, -1, 1);
	void *got = malloc(m * n * es + 8);
	uint64_t sa[2] = {m, k}, sb[2] = {k, n}, sc[2] = {m, n};
	gpud_handle ha, hb, hc = 0;
	ck_assert(gpud_alloc(c, dt, 2, sa, a, &ha) == GPUD_OK);
	ck_assert(gpud_alloc(c, dt, 2, sb, b, &hb) == GPUD_OK);
	gpud_arg args[4] = {gpud_arg_buffer("a", ha), gpud_arg_buffer("b", hb),
			    gpud_arg_bool("tf32", tf32)};
	size_t na = 3;
	if (!daemon_output) {
		void *p = malloc(m * n * es + 8);
		poison(dt, p, m * n);
		ck_assert(gpud_alloc(c, dt, 2, sc, p, &hc) == GPUD_OK);
		free(p);
		args[na++] = gpud_arg_buffer("c", hc);
	}
	gpud_output o;
	size_t no;
	gpud_run_info info;
	ck_assert_msg(gpud_run(c, "matmul", args, na, &o, 1, &no, &info) == GPUD_OK,
		      "matmul %s %llux%llux%llu: %s", gpud_dtype_name(dt), (unsigned long long)m,
		      (unsigned long long)k, (unsigned long long)n, gpud_errmsg(c));
	if (daemon_output)
		hc = o.handle;
	ck_assert(o.ndim == 2 && o.shape[0] == m && o.shape[1] == n && o.dtype == dt);
	if (m * n > 0)
		ck_assert(gpud_download_range(c, hc, 0, got, m * n * es) == GPUD_OK);
	double eps = dt == GPUD_F32 ? 0x1p-24 : 0x1p-53, worst = 0;
	size_t unwritten = 0;
	/* a as float64, b transposed: the reference's inner loop reads both in order */
	double *ad = malloc(m * k * sizeof(double) + 8), *bt = malloc(k * n * sizeof(double) + 8);
	for (uint64_t i = 0; i < m * k; i++)
		ad[i] = get(dt, a, i);
	for (uint64_t l = 0; l < k; l++)
		for (uint64_t j = 0; j < n; j++)
			bt[j * k + l] = get(dt, b, l * n + j);
	for (uint64_t i = 0; i < m; i++) {
		for (uint64_t j = 0; j < n; j++) {
			double s = 0, sabs = 0;
			for (uint64_t l = 0; l < k; l++) {
				double p = ad[i * k + l] * bt[j * k + l];
				s += p;
				sabs += fabs(p);
			}
			if (is_poison(dt, got, i * n + j)) {
				unwritten++;
				continue;
			}
			double tol = ((double)(k + 2) * eps + (tf32 ? 0x1p-9 : 0)) * sabs;
			double e = fabs(get(dt, got, i * n + j) - s);
			ck_assert_msg(e <= tol,
				      "matmul %s%s %llux%llux%llu: c[%llu][%llu] = %.17g, "
				      "reference %.17g (tol %.3g)",
				      gpud_dtype_name(dt), tf32 ? " tf32" : "",
				      (unsigned long long)m, (unsigned long long)k,
				      (unsigned long long)n, (unsigned long long)i,
				      (unsigned long long)j, get(dt, got, i * n + j), s, tol);
			if (sabs > 0 && e / sabs > worst)
				worst = e / sabs;
		}
	}
	ck_assert_msg(unwritten == 0, "matmul %s %llux%llux%llu: %zu elements unwritten",
		      gpud_dtype_name(dt), (unsigned long long)m, (unsigned long long)k,
		      (unsigned long long)n, unwritten);
	if (m * n * k >= 1000000)
		printf("matmul %-8s%s %5llux%5llux%5llu max |err|/sum|ab| %.2e kernel %.1f us\n",
		       gpud_dtype_name(dt), tf32 ? " tf32" : "     ", (unsigned long long)m,
		       (unsigned long long)k, (unsigned long long)n, worst, info.kernel_us);
	gpud_handle fr[3] = {ha, hb, hc};
	ck_assert(gpud_free(c, fr, 3) == GPUD_OK);
	free(a);
	free(b);
	free(ad);
	free(bt);
	free(got);
}

static void test_matmul(gpud_client *c)
{
	static const uint64_t shapes[][3] = {
		{1, 1, 1},    {1, 200, 7},     {7, 1, 9},       {37, 53, 29},       {129, 3, 2},
		{3, 1000, 5}, {255, 257, 263}, {640, 512, 768}, {1024, 1024, 1024}, {6, 0, 5},
	};
	for (size_t i = 0; i < sizeof(shapes) / sizeof(shapes[0]); i++) {
		const uint64_t *s = shapes[i];
		mm_case(c, GPUD_F32, 0, s[0], s[1], s[2], 0);
		mm_case(c, GPUD_F64, 0, s[0], s[1], s[2], 0);
		mm_case(c, GPUD_F32, 1, s[0], s[1], s[2], 0);
	}
	mm_case(c, GPUD_F64, 0, 33, 17, 65, 1); /* c made by gpud */
	mm_case(c, GPUD_F32, 0, 0, 4, 3, 1);    /* an empty c */
}

/* --- uniform, normal (cuRAND) --------------------------------------------------------------- */

/*
 * n numbers of name through gpud into a poisoned out, against the cpu
 * backend's code linked in here (cuRAND's host generator: libcurand must load
 * on this machine, $GPUD_CURAND). uniform must be equal bit for bit. normal:
 * cuRAND's host Box-Muller uses the host's libm, the device its own log and
 * sincos, so equality is not promised: float64 within 1e-13 and float32 within
 * 2e-6 of max(1, |x|); how many are bitwise equal is printed.
 */
static void rnd_case(gpud_client *c, const char *name, gpud_dtype dt, uint64_t n, int64_t seed,
		     double p1, double p2)
{
	const kernel_def *k = kernel_find(name);
	int normal = k == &kernel_normal;
	size_t es = gpud_dtype_size(dt);
	gpud_handle h = poisoned(c, dt, n);
	gpud_arg args[6] = {gpud_arg_i64("n", (int64_t)n),
			    gpud_arg_i64("seed", seed),
			    gpud_arg_dtype("dtype", dt),
			    gpud_arg_buffer("out", h),
			    gpud_arg_f64(normal ? "mean" : "low", p1),
			    gpud_arg_f64(normal ? "stddev" : "high", p2)};
	gpud_output o;
	size_t no;
	ck_assert_msg(gpud_run(c, name, args, 6, &o, 1, &no, NULL) == GPUD_OK, "%s: %s", name,
		      gpud_errmsg(c));
	void *got = malloc(n * es + 8), *ref = malloc(n * es + 8);
	ck_assert(gpud_download_range(c, h, 0, got, n * es) == GPUD_OK);

	kernel_args a;
	memset(&a, 0, sizeof(a));
	a.kernel = k;
	a.dtype = dt;
	a.v[RND_N].s.i64 = (int64_t)n;
	a.v[RND_SEED].s.i64 = seed;
	a.v[RND_DTYPE].s.dtype = dt;
	a.v[RND_P1].s.f64 = p1;
	a.v[RND_P2].s.f64 = p2;
	a.v[RND_OUT].arr =
		(kernel_array){.dtype = dt, .ndim = 1, .shape = {n}, .count = n, .data = ref};
	char err[1024];
	ck_assert_msg(k->cpu_available(err, sizeof(err)) == 0, "the reference: %s", err);
	k->cpu_run(&a, 0, 1);
	size_t unwritten = 0, bitwise = 0;
	/*
	 * normal: cuRAND's device Box-Muller for float32 takes sin and cos from the
	 * fast __sincosf (absolute error about 2^-21 on [-pi, pi], more up to 2 pi)
	 * times s = sqrt(-2 log u) <= 6.7, the host's from libm: up to about 1e-5
	 * absolute apart. float64 uses accurate functions on both sides.
	 */
	double worst = 0, tol = dt == GPUD_F32 ? 2e-5 : 1e-13;
	size_t worst_i = 0;
	for (size_t i = 0; i < n; i++) {
		if (is_poison(dt, got, i)) {
			unwritten++;
			continue;
		}
		if (memcmp((char *)got + i * es, (char *)ref + i * es, es) == 0) {
			bitwise++;
			continue;
		}
		double g = get(dt, got, i), r = get(dt, ref, i);
		ck_assert_msg(normal, "uniform %s n=%llu seed %lld: [%zu] = %a, the host's %a",
			      gpud_dtype_name(dt), (unsigned long long)n, (long long)seed, i, g, r);
		double e = fabs(g - r) / (fabs(r) > 1 ? fabs(r) : 1);
		if (e > worst)
			worst = e, worst_i = i;
	}
	ck_assert_msg(worst <= tol,
		      "normal %s n=%llu seed %lld: [%zu] = %.17g, the host's %.17g (%.2e apart, "
		      "tolerance %.0e)",
		      gpud_dtype_name(dt), (unsigned long long)n, (long long)seed, worst_i,
		      get(dt, got, worst_i), get(dt, ref, worst_i), worst, tol);
	ck_assert_msg(unwritten == 0, "%s %s n=%llu: %zu elements unwritten", name,
		      gpud_dtype_name(dt), (unsigned long long)n, unwritten);
	if (n > 1000)
		printf("%-7s %-8s n=%-8llu seed %-14lld bitwise equal to the host's %.4f%%, max "
		       "err %.2e\n",
		       name, gpud_dtype_name(dt), (unsigned long long)n, (long long)seed,
		       100.0 * (double)bitwise / (double)n, worst);
	ck_assert(gpud_free(c, &h, 1) == GPUD_OK);
	free(got);
	free(ref);
}

static void test_rnd(gpud_client *c, const char *name)
{
	static const uint64_t ns[] = {1, 2, 7, 1000, 4097, (1u << 20), (1u << 20) + 1};
	static const int64_t seeds[] = {0, 42, (INT64_C(1) << 40) + 7};
	int normal = !strcmp(name, "normal");
	for (int dt = GPUD_F32; dt <= GPUD_F64; dt++)
		for (size_t i = 0; i < sizeof(ns) / sizeof(ns[0]); i++)
			for (size_t s = 0; s < sizeof(seeds) / sizeof(seeds[0]); s++)
				rnd_case(c, name, (gpud_dtype)dt, ns[i], seeds[s], 0, 1);
	/* low/high, mean/stddev */
	rnd_case(c, name, GPUD_F32, 100001, 5, normal ? 3 : -2, normal ? 0.25 : 6);
	rnd_case(c, name, GPUD_F64, 100001, 5, normal ? 3 : -2, normal ? 0.25 : 6);
}

static void test_uniform(gpud_client *c)
{
	test_rnd(c, "uniform");
}

static void test_normal(gpud_client *c)
{
	test_rnd(c, "normal");
}

/* --- histogram ---------------------------------------------------------------------------- */

/* Sample i of dt as the reference bins it; v is a float64 value, rounded to dt. */
static void put_sample(gpud_dtype dt, void *x, size_t i, double v)
{
	switch (dt) {
	case GPUD_F32:
		((float *)x)[i] = (float)v;
		break;
	case GPUD_F64:
		((double *)x)[i] = v;
		break;
	case GPUD_I32:
		((int32_t *)x)[i] = !(v == v)  ? 0
				    : v < -2e9 ? -2000000000
				    : v > 2e9  ? 2000000000
					       : (int32_t)floor(v);
		break;
	default:
		((int64_t *)x)[i] = !(v == v)   ? 0
				    : v < -9e18 ? (int64_t)-9e18
				    : v > 9e18  ? (int64_t)9e18
						: (int64_t)floor(v);
		break;
	}
}

/*
 * histogram of n fresh samples of dt over [lo, hi] in `bins` bins through gpud
 * (counts poisoned first) against the reference's cpu_run: every count must be
 * equal. A fifth of the samples lie exactly on edges (the edges as the
 * reference rounds them), some on range_min and range_max, NaN and ±inf for
 * floats; the rest spread over the range and 10% of its width either side.
 */
static void hist_case(gpud_client *c, gpud_dtype dt, size_t n, int64_t bins, double lo, double hi)
{
	const kernel_def *k = kernel_find("histogram");
	size_t es = gpud_dtype_size(dt);
	void *x = malloc(n * es + 8);
	int64_t *got = malloc((size_t)bins * 8), *ref = malloc((size_t)bins * 8);
	hist_plan p;
	char err[512];
	ck_assert_msg(hist_plan_make(dt, bins, lo, hi, &p, err, sizeof(err)) == 0, "%s", err);
	double w = p.last - p.first;
	for (size_t i = 0; i < n; i++) {
		uint64_t r = rnd() % 20;
		double v = uniform(p.first - 0.1 * w, p.last + 0.1 * w);
		if (r < 4) /* on an edge */
			v = hist_edge(&p, (int64_t)(rnd() % (uint64_t)(bins + 1)));
		else if (r == 4)
			v = (rnd() & 1) ? hi : lo;
		else if (r == 5 && (dt == GPUD_F32 || dt == GPUD_F64))
			v = (rnd() % 3) == 0 ? NAN : (rnd() & 1) ? INFINITY : -INFINITY;
		if (dt == GPUD_F32 && !(fabs(v) < 3.4e38) && v == v && !isinf(v))
			v = copysign(3.4e38, v);
		put_sample(dt, x, i, v);
		if (dt == GPUD_I64 && fabs(v) >= 4503599627370496.0) /* odd values too, past 2^52 */
			((int64_t *)x)[i] += (int64_t)(rnd() % 3) - 1;
	}
	uint64_t shape = n;
	gpud_handle hx, hc = poisoned(c, GPUD_I64, (uint64_t)bins);
	ck_assert(gpud_alloc(c, dt, 1, &shape, x, &hx) == GPUD_OK);
	gpud_arg args[5] = {gpud_arg_buffer("x", hx), gpud_arg_buffer("counts", hc),
			    gpud_arg_i64("bins", bins), gpud_arg_f64("range_min", lo),
			    gpud_arg_f64("range_max", hi)};
	gpud_output o;
	size_t no;
	ck_assert_msg(gpud_run(c, "histogram", args, 5, &o, 1, &no, NULL) == GPUD_OK,
		      "histogram %s n=%zu bins=%lld [%.17g, %.17g]: %s", gpud_dtype_name(dt), n,
		      (long long)bins, lo, hi, gpud_errmsg(c));
	ck_assert_uint_eq(o.handle, hc);
	ck_assert(gpud_download_range(c, hc, 0, got, (size_t)bins * 8) == GPUD_OK);

	kernel_args a;
	memset(&a, 0, sizeof(a));
	a.kernel = k;
	a.dtype = dt;
	a.v[HIST_X].arr =
		(kernel_array){.dtype = dt, .ndim = 1, .shape = {n}, .count = n, .data = x};
	a.v[HIST_COUNTS].arr = (kernel_array){.dtype = GPUD_I64,
					      .ndim = 1,
					      .shape = {(uint64_t)bins},
					      .count = (size_t)bins,
					      .data = ref};
	a.v[HIST_BINS].s.i64 = bins;
	a.v[HIST_MIN].s.f64 = lo;
	a.v[HIST_MAX].s.f64 = hi;
	k->cpu_run(&a, 0, k->cpu_items(&a));
	int64_t total = 0, unwritten = 0, bad = -1;
	for (int64_t b = 0; b < bins; b++) {
		total += ref[b];
		if (is_poison(GPUD_I64, got, (size_t)b))
			unwritten++;
		else if (got[b] != ref[b] && bad < 0)
			bad = b;
	}
	ck_assert_msg(unwritten == 0, "histogram %s n=%zu bins=%lld: %lld counts unwritten",
		      gpud_dtype_name(dt), n, (long long)bins, (long long)unwritten);
	ck_assert_msg(bad < 0,
		      "histogram %s n=%zu bins=%lld [%.17g, %.17g]: bin %lld counted %lld, the "
		      "reference %lld",
		      gpud_dtype_name(dt), n, (long long)bins, lo, hi, (long long)bad,
		      bad < 0 ? 0 : (long long)got[bad], bad < 0 ? 0 : (long long)ref[bad]);
	if (n > 1000)
		printf("histogram %-8s n=%-8zu bins=%-7lld [%-12.6g %12.6g] %lld counted, equal\n",
		       gpud_dtype_name(dt), n, (long long)bins, lo, hi, (long long)total);
	gpud_handle fr[2] = {hx, hc};
	ck_assert(gpud_free(c, fr, 2) == GPUD_OK);
	free(x);
	free(got);
	free(ref);
}

static void test_histogram(gpud_client *c)
{
	static const size_t ns[] = {1, 1000, (1u << 20) + 3};
	/* up to 4095 bins: shared edges and counters (below 64 aggregated per warp);
	 * 8192 and 10000: CUB's DeviceHistogram; 2^19 bins over 2^20 samples (below):
	 * the atomic kernel (CUB's counters would pass 128 MiB) */
	static const int64_t binss[] = {1, 7, 64, 256, 1000, 4095, 8192, 10000};
	for (int dt = GPUD_F32; dt <= GPUD_I64; dt++) {
		int ints = dt == GPUD_I32 || dt == GPUD_I64;
		for (size_t i = 0; i < sizeof(ns) / sizeof(ns[0]); i++) {
			for (size_t j = 0; j < sizeof(binss) / sizeof(binss[0]); j++) {
				double lo = uniform(-1000, 1000), hi;
				if (ints) /* integer edges: samples land on them */
					lo = floor(lo),
					hi = lo + (double)binss[j] * (double)(1 + rnd() % 5);
				else
					hi = lo + exp(uniform(log(1e-3), log(1e4)));
				hist_case(c, (gpud_dtype)dt, ns[i], binss[j], lo, hi);
			}
		}
		double lo = floor(uniform(-100, 100));
		hist_case(c, (gpud_dtype)dt, 4099, 3, lo, lo); /* an empty range, widened */
		hist_case(c, (gpud_dtype)dt, (1u << 20) + 3, 1 << 19, lo, lo + (1 << 19));
	}
	/* float32 ranges beyond ±3.4e38 (numpy 1.x bins them in float64), and one wider
	 * than float32 holds (x - range_min overflows: numpy fails, both backends clamp) */
	hist_case(c, GPUD_F32, 100000, 10, -1e38, 1e39);
	hist_case(c, GPUD_F32, 100000, 300, -3e38, 3.3e38);
	/* int64 beyond 2^53: converted to float64 as numpy does */
	hist_case(c, GPUD_I64, 100000, 16, 9007199254740992.0, 9007199254741024.0);
}

/* --- every kernel has a GPU test ---------------------------------------------------- */

static const struct {
	const char *kernel;
	void (*run)(gpud_client *c);
} gpu_tests[] = {
	{"lombscargle", test_lombscargle},
	{"add", test_ew_add},
	{"sub", test_ew_sub},
	{"mul", test_ew_mul},
	{"div", test_ew_div},
	{"axpy", test_ew_axpy},
	{"saxpy_trig", test_ew_saxpy_trig},
	{"rel_diff", test_ew_rel_diff},
	{"sum_of_squares", test_ew_sum_of_squares},
	{"sum", test_red_sum},
	{"asum", test_red_asum},
	{"min", test_red_min},
	{"max", test_red_max},
	{"mean", test_red_mean},
	{"dot", test_red_dot},
	{"histogram", test_histogram},
	{"matmul", test_matmul},
	{"uniform", test_uniform},
	{"normal", test_normal},
};

START_TEST(every_kernel_against_reference)
{
	gpud_client *c;
	size_t nk;
	const kernel_def *const *ks = kernel_list(&nk);

	start_gpud();
	ck_assert_msg(connect_timeout(&c) == GPUD_OK, "%s", gpud_errmsg(c));
	ck_assert_str_eq(gpud_server(c)->backend, "cuda");
	ck_assert_int_ge(gpud_server(c)->ndevices, 1);
	printf("device: %s (sm_%d%d), seed %016llx\n", gpud_server(c)->devices[0].name,
	       gpud_server(c)->devices[0].cc_major, gpud_server(c)->devices[0].cc_minor,
	       (unsigned long long)rng_state);
	for (size_t i = 0; i < nk; i++) {
		size_t j;
		for (j = 0; j < sizeof(gpu_tests) / sizeof(gpu_tests[0]); j++)
			if (!strcmp(gpu_tests[j].kernel, ks[i]->name))
				break;
		ck_assert_msg(j < sizeof(gpu_tests) / sizeof(gpu_tests[0]),
			      "kernel %s has no GPU test", ks[i]->name);
		double t0 = wall();
		gpu_tests[j].run(c);
		printf("kernel %-16s tested in %.2f s\n", ks[i]->name, wall() - t0);
		fflush(stdout);
	}
	gpud_daemon_status st;
	ck_assert(gpud_status_get(c, &st) == GPUD_OK);
	ck_assert_uint_eq(st.buffers, 0);
	ck_assert_int_ge(st.nvariants, 2);
	gpud_close(c);
	stop_gpud();
}
END_TEST

/* --- the memory pool ---------------------------------------------------------------- */

static gpud_daemon_status status_of(gpud_client *c)
{
	gpud_daemon_status st;
	ck_assert_msg(gpud_status_get(c, &st) == GPUD_OK, "%s", gpud_errmsg(c));
	ck_assert_msg(st.has_pool, "the cuda backend reports no pool");
	return st;
}

/* Buffers of a closed connection go back to the pool; reuse hits the cache. */
START_TEST(pool_accounting_returns_to_zero)
{
	gpud_client *a, *b;
	start_gpud();
	ck_assert(connect_timeout(&b) == GPUD_OK);
	gpud_daemon_status st0 = status_of(b);
	ck_assert_uint_eq(st0.pool_in_use, 0);
	ck_assert_uint_gt(st0.pool_cached, 0); /* the start-up reservation */

	for (int round = 0; round < 3; round++) {
		ck_assert(connect_timeout(&a) == GPUD_OK);
		static const uint64_t sizes[] = {1, 1000, 1 << 20, 3 << 20, 64 << 20};
		for (int i = 0; i < 5; i++) {
			gpud_handle h;
			ck_assert_msg(gpud_alloc(a, GPUD_F32, 1, &sizes[i], NULL, &h) == GPUD_OK,
				      "%s", gpud_errmsg(a));
		}
		gpud_daemon_status st = status_of(b);
		ck_assert_uint_ge(st.pool_in_use,
				  (1 + 1000 + (1 << 20) + (3 << 20) + (64 << 20)) * 4ull);
		gpud_close(a); /* no free: the connection's buffers are released */
		for (int i = 0; i < 200 && (st = status_of(b)).pool_in_use != 0; i++)
			usleep(10000);
		ck_assert_msg(st.pool_in_use == 0 && st.buffers == 0,
			      "after disconnect: pool %llu bytes in use, %llu buffers",
			      (unsigned long long)st.pool_in_use, (unsigned long long)st.buffers);
	}
	gpud_daemon_status st = status_of(b);
	printf("pool: %llu allocations, %llu from the cache, high-water %llu bytes, %llu cached\n",
	       (unsigned long long)st.pool_allocs, (unsigned long long)st.pool_hits,
	       (unsigned long long)st.pool_high_water, (unsigned long long)st.pool_cached);
	ck_assert_uint_eq(st.pool_allocs, 15);
	ck_assert_uint_ge(st.pool_hits, 10); /* rounds 2 and 3 reuse round 1's blocks */
	gpud_close(b);
	stop_gpud();
}
END_TEST

/* Over the pool's limit: that request fails, nobody else's data moves. */
START_TEST(pool_out_of_memory_leaves_others_intact)
{
	gpud_client *a, *b;
	uint64_t n = 64ull << 20; /* 64 Mi floats = 256 MiB */
	float *data = malloc(n * sizeof(float)), probe[1024];

	start_gpud_with("[gpud]\npool_max_total = 1GiB\npool_reserve = 0\n");
	ck_assert(connect_timeout(&a) == GPUD_OK);
	ck_assert(connect_timeout(&b) == GPUD_OK);
	for (uint64_t i = 0; i < n; i++)
		data[i] = (float)(i % 1000003) + 0.5f;
	gpud_handle keep, big;
	ck_assert_msg(gpud_alloc(b, GPUD_F32, 1, &n, NULL, &keep) == GPUD_OK, "%s", gpud_errmsg(b));
	ck_assert_msg(gpud_upload(b, keep, 0, data, 1u << 20) == GPUD_OK, "%s", gpud_errmsg(b));
	ck_assert_msg(gpud_upload(b, keep, (n - (1u << 18)) * 4, data + n - (1u << 18), 1u << 20) ==
			      GPUD_OK,
		      "%s", gpud_errmsg(b));

	uint64_t too_big = 200ull << 20; /* 800 MiB of floats: over 1 GiB with the 256 MiB */
	gpud_status st = gpud_alloc(a, GPUD_F32, 1, &too_big, NULL, &big);
	printf("over the limit: %s: %s\n", gpud_strerror(st), gpud_errmsg(a));
	ck_assert_int_eq(st, GPUD_ENOMEM);
	ck_assert_msg(strstr(gpud_errmsg(a), "asked for 838860800 bytes") != NULL, "message: %s",
		      gpud_errmsg(a));
	ck_assert_msg(strstr(gpud_errmsg(a), "limit") != NULL, "message: %s", gpud_errmsg(a));

	/* The other client's buffer still holds its data, at both ends. */
	ck_assert(gpud_download_range(b, keep, 0, probe, sizeof(probe)) == GPUD_OK);
	ck_assert(memcmp(probe, data, sizeof(probe)) == 0);
	ck_assert(gpud_download_range(b, keep, (n - 1024) * 4, probe, sizeof(probe)) == GPUD_OK);
	ck_assert(memcmp(probe, data + n - 1024, sizeof(probe)) == 0);
	/* And the failed client can still work within the limit. */
	uint64_t small = 1 << 20;
	ck_assert_msg(gpud_alloc(a, GPUD_F32, 1, &small, NULL, &big) == GPUD_OK, "%s",
		      gpud_errmsg(a));
	gpud_close(a);
	gpud_close(b);
	free(data);
	stop_gpud();
}
END_TEST

/*
 * Every copy path of the cuda backend at sizes around its edges: through
 * messages (small on the loop via one staging buffer; larger streamed through
 * the staging buffers in chunks, more chunks than buffers), the scratch
 * region, and a pinned host region. Downloads land in memory poisoned first.
 */
static void copy_roundtrip(gpud_client *c, const char *how, uint8_t *src, uint8_t *dst, size_t n)
{
	gpud_handle h;
	uint64_t count = n / 4;
	for (size_t i = 0; i < n; i++)
		src[i] = (uint8_t)rnd();
	memset(dst, 0xA5, n);
	ck_assert_msg(gpud_alloc(c, GPUD_I32, 1, &count, NULL, &h) == GPUD_OK, "%s",
		      gpud_errmsg(c));
	ck_assert_msg(gpud_upload(c, h, 0, src, n) == GPUD_OK, "%s upload of %zu: %s", how, n,
		      gpud_errmsg(c));
	ck_assert_msg(gpud_download_range(c, h, 0, dst, n) == GPUD_OK, "%s download of %zu: %s",
		      how, n, gpud_errmsg(c));
	size_t bad = n;
	for (size_t i = 0; i < n && bad == n; i++)
		if (src[i] != dst[i])
			bad = i;
	ck_assert_msg(bad == n, "%s: %zu bytes came back different from byte %zu", how, n, bad);
	/* An offset upload of the middle; the ends must keep their bytes. */
	if (n >= 16) {
		memset(src + 4, 0x3C, n - 8);
		ck_assert(gpud_upload(c, h, 4, src + 4, n - 8) == GPUD_OK);
		memset(dst, 0xA5, n);
		ck_assert(gpud_download_range(c, h, 0, dst, n) == GPUD_OK);
		ck_assert_msg(memcmp(src, dst, n) == 0, "%s: offset upload of %zu bytes", how,
			      n - 8);
	}
	gpud_free(c, &h, 1);
}

START_TEST(copy_paths_at_their_edges)
{
	static const size_t sizes[] = {4,       60 << 10,       (64 << 10) + 4, (4 << 20) - 4,
				       4 << 20, (9 << 20) + 12, 37 << 20};
	const size_t maxn = 37 << 20;
	gpud_client *msg, *shm;
	uint8_t *src = malloc(maxn), *dst = malloc(maxn);

	start_gpud_with("[gpud]\nstaging_buffers = 4\nstaging_chunk = 4MiB\n");
	setenv("GPUD_NO_SHM", "1", 1);
	ck_assert(connect_timeout(&msg) == GPUD_OK);
	unsetenv("GPUD_NO_SHM");
	ck_assert(connect_timeout(&shm) == GPUD_OK);
	ck_assert(!gpud_has_shm(msg) && gpud_has_shm(shm));
	uint8_t *hsrc = gpud_host_alloc(shm, maxn), *hdst = gpud_host_alloc(shm, maxn);
	ck_assert_msg(hsrc && hdst, "gpud_host_alloc: %s", gpud_errmsg(shm));
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		copy_roundtrip(msg, "messages", src, dst, sizes[i]);
		copy_roundtrip(shm, "scratch region", src, dst, sizes[i]);
		copy_roundtrip(shm, "host region", hsrc, hdst, sizes[i]);
	}
	gpud_daemon_status st = status_of(msg);
	ck_assert(st.has_staging);
	ck_assert_uint_eq(st.staging_buffers, 4);
	ck_assert_uint_eq(st.staging_free, 4); /* every buffer came back */
	ck_assert_uint_ge(st.bytes_staged, 2 * (37u << 20));
	printf("copies: %" PRIu64 " bytes staged through %u pinned buffers of %" PRIu64 " bytes\n",
	       st.bytes_staged, st.staging_buffers, st.staging_chunk);
	gpud_close(msg);
	gpud_close(shm);
	free(src);
	free(dst);
	stop_gpud();
}
END_TEST

/*
 * Different sessions overlap: one client's DMA (1 GiB from a pinned region,
 * on the copy engines) and another's kernel (on the SMs) take about the
 * longer of the two together, not their sum.
 */
typedef struct overlap_arg {
	gpud_client *c;
	gpud_handle h[4];
	void *region;
	size_t n;
	int kind; /* 0 copy, 1 kernel */
	int reps;
	double seconds;
	gpud_status st;
} overlap_arg;

static void *overlap_work(void *p)
{
	overlap_arg *a = p;
	double t0 = wall();
	for (int r = 0; r < a->reps && a->st == GPUD_OK; r++) {
		if (a->kind == 0) {
			a->st = gpud_upload(a->c, a->h[0], 0, a->region, a->n);
		} else {
			gpud_arg args[4] = {gpud_arg_buffer("x", a->h[0]),
					    gpud_arg_buffer("y", a->h[1]),
					    gpud_arg_buffer("freqs", a->h[2]),
					    gpud_arg_buffer("pgram", a->h[3])};
			gpud_output o;
			size_t no;
			a->st = gpud_run(a->c, "lombscargle", args, 4, &o, 1, &no, NULL);
		}
	}
	a->seconds = wall() - t0;
	return NULL;
}

START_TEST(sessions_overlap)
{
	overlap_arg cp = {.kind = 0, .reps = 8, .n = 1u << 30}, kr = {.kind = 1, .reps = 8};
	uint64_t nx = 2048, nf = 1u << 21, nwords = cp.n / 4;

	start_gpud();
	ck_assert(connect_timeout(&cp.c) == GPUD_OK);
	ck_assert(connect_timeout(&kr.c) == GPUD_OK);
	cp.region = gpud_host_alloc(cp.c, cp.n);
	ck_assert_msg(cp.region != NULL, "%s", gpud_errmsg(cp.c));
	memset(cp.region, 7, cp.n);
	ck_assert(gpud_alloc(cp.c, GPUD_I32, 1, &nwords, NULL, &cp.h[0]) == GPUD_OK);
	float *x = make_array(GPUD_F32, nx, 0, 100, 1), *y = make_array(GPUD_F32, nx, -1, 1, 0),
	      *f = make_array(GPUD_F32, nf, 0.01, 20, 0);
	ck_assert(gpud_alloc(kr.c, GPUD_F32, 1, &nx, x, &kr.h[0]) == GPUD_OK);
	ck_assert(gpud_alloc(kr.c, GPUD_F32, 1, &nx, y, &kr.h[1]) == GPUD_OK);
	ck_assert(gpud_alloc(kr.c, GPUD_F32, 1, &nf, f, &kr.h[2]) == GPUD_OK);
	ck_assert(gpud_alloc(kr.c, GPUD_F32, 1, &nf, NULL, &kr.h[3]) == GPUD_OK);
	/* warm, then each alone, then both at once */
	overlap_arg w1 = cp, w2 = kr;
	w1.reps = w2.reps = 1;
	overlap_work(&w1);
	overlap_work(&w2);
	overlap_work(&cp);
	overlap_work(&kr);
	ck_assert_msg(cp.st == GPUD_OK && kr.st == GPUD_OK, "alone: %s / %s", gpud_errmsg(cp.c),
		      gpud_errmsg(kr.c));
	double alone_cp = cp.seconds, alone_kr = kr.seconds;
	pthread_t t1, t2;
	double t0 = wall();
	pthread_create(&t1, NULL, overlap_work, &cp);
	pthread_create(&t2, NULL, overlap_work, &kr);
	pthread_join(t1, NULL);
	pthread_join(t2, NULL);
	double both = wall() - t0;
	ck_assert_msg(cp.st == GPUD_OK && kr.st == GPUD_OK, "together: %s / %s", gpud_errmsg(cp.c),
		      gpud_errmsg(kr.c));
	printf("overlap: 8 x 1 GiB uploads alone %.1f ms, 8 lombscargle runs alone %.1f ms, "
	       "both at once %.1f ms (sum %.1f ms)\n",
	       alone_cp * 1e3, alone_kr * 1e3, both * 1e3, (alone_cp + alone_kr) * 1e3);
	double longer = alone_cp > alone_kr ? alone_cp : alone_kr;
	ck_assert_msg(both < 0.8 * (alone_cp + alone_kr) && both < 1.5 * longer,
		      "two sessions did not overlap: %.1f ms together vs %.1f + %.1f ms alone",
		      both * 1e3, alone_cp * 1e3, alone_kr * 1e3);
	gpud_close(cp.c);
	gpud_close(kr.c);
	free(x);
	free(y);
	free(f);
	stop_gpud();
}
END_TEST

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

/* Uploads n poisoned elements of dt into a new buffer. */
static gpud_handle poisoned(gpud_client *c, gpud_dtype dt, uint64_t n)
{
	void *p = malloc(n * gpud_dtype_size(dt));
	gpud_handle h;
	poison(dt, p, n);
	ck_assert_msg(gpud_alloc(c, dt, 1, &n, p, &h) == GPUD_OK, "%s", gpud_errmsg(c));
	free(p);
	return h;
}

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
 * A custom kernel that faults: its client gets the CUDA error, every other
 * request after it the same, and gpud exits 1 for its supervisor to start a
 * fresh one (one context serves every tenant; README says so).
 */
START_TEST(custom_kernel_fault_ends_the_context)
{
	start_gpud();
	gpud_client *c, *other;
	ck_assert(connect_timeout(&c) == GPUD_OK);
	ck_assert(connect_timeout(&other) == GPUD_OK);
	gpud_kernel_spec bad = {
		.name = "crash",
		.source =
			"extern \"C\" __global__ void crash(float *y)\n{\n\tfloat *p = (float *)0x10;\n"
			"\tp[threadIdx.x] = y[0];\n}\n",
		.entry = "crash",
		.signature = "y:out f32[]",
		.blocks_per_sm = 1};
	ck_assert_msg(gpud_register(c, &bad) == GPUD_OK, "%s", gpud_errmsg(c));
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
	int wst = -1;
	for (int i = 0; i < 200 && waitpid(gpud_pid, &wst, WNOHANG) == 0; i++)
		usleep(50000);
	ck_assert_msg(WIFEXITED(wst) && WEXITSTATUS(wst) == 1,
		      "gpud should exit 1 after losing its context (status %d)", wst);
	gpud_close(c);
	gpud_close(other);
	char cmd[256];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", sockdir);
	ck_assert_int_eq(system(cmd), 0);
}
END_TEST

int main(void)
{
	if (getrandom(&rng_state, sizeof(rng_state), 0) != sizeof(rng_state))
		rng_state = (uint64_t)time(NULL);
	Suite *s = suite_create("gpu");
	TCase *tc = tcase_create("kernels");
	tcase_set_timeout(tc, 600);
	tcase_add_test(tc, every_kernel_against_reference);
	suite_add_tcase(s, tc);
	tc = tcase_create("pool");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, pool_accounting_returns_to_zero);
	tcase_add_test(tc, pool_out_of_memory_leaves_others_intact);
	suite_add_tcase(s, tc);
	tc = tcase_create("copies and streams");
	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, copy_paths_at_their_edges);
	tcase_add_test(tc, sessions_overlap);
	suite_add_tcase(s, tc);
	tc = tcase_create("custom kernels");
	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, custom_kernels_against_cpu);
	tcase_add_test(tc, custom_kernel_fault_ends_the_context);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_set_fork_status(sr, CK_NOFORK);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
