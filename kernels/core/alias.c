/*
 * kernels/core/alias.c — no silent aliasing: a run's arguments checked for
 * outputs that share bytes with an input or with another output
 * (kernels/core/kernel.h, kernel_alias_check), and the names of the inputs
 * an output may be written in place of, for listings and messages.
 *
 * A kernel writing an output while it still reads an input it overlaps
 * computes garbage (on the GPU, in an order nobody can predict), so such a
 * run is refused before it is queued, naming both arguments. The one
 * exception is declared by the kernel: an output whose kernel_param has
 * inplace_of set for an input may be given exactly that input's array (the
 * same bytes, dtype and count): elementwise kernels read element i before
 * writing it. A partial overlap is never allowed.
 *
 * Pure functions of a bound kernel_args: the daemon's loop thread calls them
 * while it binds a run (daemon/verbs/run.c); the unit tests call them on
 * arrays they make up (kernels/core/test_alias.c).
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "kernels/core/kernel.h"

/* Param i's array as the bytes [*lo, *hi); 0 where it has none (a scalar, an
 * input given a scalar, an output not bound yet, an empty array). */
static int range_of(const kernel_args *a, int i, uintptr_t *lo, uintptr_t *hi)
{
	const kernel_param *p = &a->kernel->params[i];
	const kernel_value *v = &a->v[i];

	if (p->role == KPARAM_SCALAR || !v->present || v->scalar || v->arr.data == NULL)
		return 0;
	size_t n = v->arr.count * gpud_dtype_size(v->arr.dtype);
	if (n == 0)
		return 0;
	*lo = (uintptr_t)v->arr.data;
	*hi = *lo + n;
	return 1;
}

void kernel_inplace_names(const kernel_def *k, const kernel_param *p, char *buf, size_t len)
{
	size_t n = 0;

	if (len)
		buf[0] = '\0';
	for (int i = 0; p->role == KPARAM_OUT && i < k->nparams; i++)
		if (p->inplace_of & KPARAM_BIT(i))
			n += (size_t)snprintf(buf + n, n < len ? len - n : 0, "%s%s", n ? "|" : "",
					      k->params[i].name);
}

/* " (handle 0123456789abcdef)", or "" without one. */
static void handle_text(const uint64_t *handles, int i, char *buf, size_t len)
{
	buf[0] = '\0';
	if (handles && handles[i])
		snprintf(buf, len, " (handle %016" PRIx64 ")", handles[i]);
}

int kernel_alias_check(const kernel_args *a, const uint64_t *handles, char *err, size_t errlen)
{
	const kernel_def *k = a->kernel;

	for (int o = 0; o < k->nparams; o++) {
		const kernel_param *po = &k->params[o];
		uintptr_t olo, ohi;
		if (po->role != KPARAM_OUT || !range_of(a, o, &olo, &ohi))
			continue;
		for (int j = 0; j < k->nparams; j++) {
			const kernel_param *pj = &k->params[j];
			uintptr_t jlo, jhi;
			/* a pair of outputs is looked at once, from the first of them */
			if (j == o || (pj->role == KPARAM_OUT && j < o) ||
			    !range_of(a, j, &jlo, &jhi))
				continue;
			if (ohi <= jlo || jhi <= olo)
				continue; /* apart */
			const kernel_array *ao = &a->v[o].arr, *aj = &a->v[j].arr;
			int same_bytes = olo == jlo && ohi == jhi;
			int exact = same_bytes && ao->dtype == aj->dtype && ao->count == aj->count;
			if (exact && pj->role == KPARAM_IN && (po->inplace_of & KPARAM_BIT(j)))
				continue; /* declared in place */

			char h[48], what[96], why[256], names[128];
			handle_text(handles, j, h, sizeof(h));
			if (handles && handles[o] && handles[o] == handles[j])
				snprintf(what, sizeof(what), "the same buffer");
			else if (same_bytes)
				snprintf(what, sizeof(what), "the same %zu bytes",
					 (size_t)(ohi - olo));
			else
				snprintf(what, sizeof(what), "%zu of its %zu bytes",
					 (size_t)((ohi < jhi ? ohi : jhi) -
						  (olo > jlo ? olo : jlo)),
					 (size_t)(ohi - olo));
			kernel_inplace_names(k, po, names, sizeof(names));
			if (pj->role == KPARAM_OUT)
				snprintf(why, sizeof(why), "each output needs bytes of its own");
			else if (!exact)
				snprintf(why, sizeof(why),
					 "an output may share bytes with an input only as the very "
					 "same array (in place), never in part");
			else if (names[0])
				snprintf(
					why, sizeof(why),
					"'%s' may be written in place of %s only; give it a buffer "
					"of its own",
					po->name, names);
			else if (k->custom)
				snprintf(
					why, sizeof(why),
					"%s does not declare '%s' in place of '%s' (inplace(%s) after "
					"the output's declaration); give it a buffer of its own",
					k->name, po->name, pj->name, pj->name);
			else
				snprintf(
					why, sizeof(why),
					"%s does not write '%s' in place; give it a buffer of its own",
					k->name, po->name);
			snprintf(err, errlen, "%s: output '%s' overlaps %s '%s'%s: %s; %s", k->name,
				 po->name, pj->role == KPARAM_OUT ? "output" : "input", pj->name, h,
				 what, why);
			return -1;
		}
	}
	return 0;
}
