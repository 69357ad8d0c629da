/* daemon/backend.c — choosing and opening a backend. */
#include <stdio.h>
#include <string.h>

#include "daemon/backend/backend.h"
#include "daemon/log.h"

int backend_open(gpud_backend *b, uv_loop_t *loop, const gpud_config *cfg, char *err, size_t errlen)
{
	memset(b, 0, sizeof(*b));
	b->loop = loop;

	if (strcmp(cfg->backend, "cpu") == 0) {
		b->ops = &backend_cpu_ops;
		return b->ops->open(b, cfg, err, errlen);
	}
#ifdef GPUD_HAVE_CUDA
	b->ops = &backend_cuda_ops;
	if (b->ops->open(b, cfg, err, errlen) == 0)
		return 0;
	if (strcmp(cfg->backend, "cuda") == 0)
		return -1;
	log_warn("backend auto: %s; using the cpu backend", err);
#else
	if (strcmp(cfg->backend, "cuda") == 0) {
		snprintf(
			err, errlen,
			"backend cuda: this gpud was built without CUDA (rebuild with nvcc on PATH "
			"or CUDA=1)");
		return -1;
	}
	log_warn("backend auto: this gpud was built without CUDA; using the cpu backend");
#endif
	memset(b, 0, sizeof(*b));
	b->loop = loop;
	b->ops = &backend_cpu_ops;
	return b->ops->open(b, cfg, err, errlen);
}

void backend_close(gpud_backend *b)
{
	if (b->ops && b->ops->close)
		b->ops->close(b);
	b->ops = NULL;
}
