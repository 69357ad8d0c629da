/*
 * tests/gpu/util.c — what the GPU tests share (tests/gpu/gpu_test.h): the
 * seeded generator, random arrays, the poison and reading elements back.
 */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <gpud/client.h>

#include "tests/gpu/gpu_test.h"

uint64_t rng_state;

uint64_t rnd(void)
{
	uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

double wall(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

double uniform(double lo, double hi)
{
	return lo + (hi - lo) * (double)(rnd() >> 11) / 9007199254740992.0;
}

void *make_array(gpud_dtype dt, size_t n, double lo, double hi, int sorted)
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

double get(gpud_dtype dt, const void *p, size_t i)
{
	return dt == GPUD_F32 ? (double)((const float *)p)[i] : ((const double *)p)[i];
}

double get_any(gpud_dtype dt, const void *p, size_t i)
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
void *random_of(gpud_dtype dt, size_t n, double lo, double hi)
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

/* Uploads n poisoned elements of dt into a new buffer. */
gpud_handle poisoned(gpud_client *c, gpud_dtype dt, uint64_t n)
{
	void *p = malloc(n * gpud_dtype_size(dt));
	gpud_handle h;
	poison(dt, p, n);
	ck_assert_msg(gpud_alloc(c, dt, 1, &n, p, &h) == GPUD_OK, "%s", gpud_errmsg(c));
	free(p);
	return h;
}
