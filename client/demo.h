/*
 * client/demo.h — the classic lombscargle benchmark signal, built in so the
 * demo and the benchmarks need no data files: 2^10 evenly spaced x on
 * [0.01, 10 pi], y = 2 cos(x + pi/2), 10% of the points kept at random
 * (fixed seed), 2^20 angular frequencies evenly spaced on [0.01, 10]:
 * the grid f0 = DEMO_F0, df = DEMO_DF, nf = DEMO_FREQS, which gpud makes
 * itself (nothing uploaded); freqs holds the same values, f0 + df k in
 * float64, for programs that upload them as an array.
 */
#ifndef GPUD_DEMO_H
#define GPUD_DEMO_H

#include <stddef.h>
#include <stdint.h>

#define DEMO_POINTS 1024
#define DEMO_KEPT 102
#define DEMO_FREQS (1u << 20)
#define DEMO_F0 0.01
#define DEMO_DF ((10 - 0.01) / (DEMO_FREQS - 1))

typedef struct demo_signal {
	double x[DEMO_KEPT], y[DEMO_KEPT];
	double *freqs; /* DEMO_FREQS values, malloc'd */
} demo_signal;

/* 0 or -1 (out of memory). */
int demo_signal_make(demo_signal *s, uint64_t seed);
void demo_signal_free(demo_signal *s);

#endif
