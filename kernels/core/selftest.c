/*
 * kernels/core/selftest.c — every sample of a kernel built on the host, its
 * CPU reference computed and handed to a backend's run
 * (kernels/core/selftest.h). No state; the calling thread's.
 */
#include <stdio.h>

#include "kernels/core/cpu_kernel.h"
#include "kernels/core/selftest.h"

int kernel_selftest_samples(const kernel_def *k, int with_reference, selftest_run_fn run, void *arg,
			    char *err, size_t errlen)
{
	char msg[768], why[768] = "", refused[768], where[256];
	gpud_dtype dts[4];
	int ndt = kernel_sample_dtypes(k, dts);
	const cpu_kernel *ref = cpu_kernel_of(k);

	if (k->samples == NULL || k->samples[0] == NULL) {
		snprintf(err, errlen, "%s: the kernel has no samples to self-test", k->name);
		return -1;
	}
	int have_ref = with_reference && ref != NULL &&
		       (ref->available == NULL || ref->available(why, sizeof(why)) == 0);
	for (int si = 0; k->samples[si] != NULL; si++) {
		const char *text = k->samples[si];
		int ran = 0;
		refused[0] = '\0';
		for (int d = 0; d < ndt; d++) {
			kernel_sample s;
			int rv = kernel_sample_build(k, text, dts[d], &s, msg, sizeof(msg));
			snprintf(where, sizeof(where), "%s sample %d (\"%.80s\"), %s", k->name, si,
				 text,
				 dts[d] == GPUD_DTYPE_INVALID ? "-" : gpud_dtype_name(dts[d]));
			if (rv < 0) {
				snprintf(err, errlen, "%s: %s", where, msg);
				kernel_sample_free(&s);
				return -1;
			}
			if (rv > 0) { /* this dtype is refused for this sample */
				snprintf(refused, sizeof(refused), "%s", msg);
				kernel_sample_free(&s);
				continue;
			}
			ran++;
			if (have_ref)
				ref->run(&s.a, 0, ref->items(&s.a));
			rv = run(&s, have_ref, where, arg, err, errlen);
			kernel_sample_free(&s);
			if (rv != 0)
				return -1;
		}
		if (ran == 0) {
			snprintf(err, errlen, "%s sample %d (\"%.80s\") runs for no dtype: %s",
				 k->name, si, text, refused);
			return -1;
		}
	}
	return 0;
}
