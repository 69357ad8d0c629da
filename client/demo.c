/* client/demo.c — the built-in lombscargle benchmark signal. */
#include <math.h>
#include <stdlib.h>

#include "client/demo.h"

static uint64_t splitmix64(uint64_t *state)
{
	uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

int demo_signal_make(demo_signal *s, uint64_t seed)
{
	int idx[DEMO_POINTS], keep[DEMO_POINTS] = {0};

	s->freqs = malloc(DEMO_FREQS * sizeof(double));
	if (s->freqs == NULL)
		return -1;
	/* Choose DEMO_KEPT of the points: a partial Fisher-Yates shuffle. */
	for (int i = 0; i < DEMO_POINTS; i++)
		idx[i] = i;
	for (int i = 0; i < DEMO_KEPT; i++) {
		int j = i + (int)(splitmix64(&seed) % (uint64_t)(DEMO_POINTS - i));
		int t = idx[i];
		idx[i] = idx[j];
		idx[j] = t;
		keep[idx[i]] = 1;
	}
	/* Keep them in time order, as np.linspace(...)[mask] would. */
	for (int i = 0, n = 0; i < DEMO_POINTS; i++) {
		if (!keep[i])
			continue;
		double x = 0.01 + (10 * M_PI - 0.01) * (double)i / (DEMO_POINTS - 1);
		s->x[n] = x;
		s->y[n] = 2 * cos(x + M_PI / 2);
		n++;
	}
	for (unsigned i = 0; i < DEMO_FREQS; i++)
		s->freqs[i] = DEMO_F0 + DEMO_DF * (double)i; /* as gpud makes the grid */
	return 0;
}

void demo_signal_free(demo_signal *s)
{
	free(s->freqs);
	s->freqs = NULL;
}
