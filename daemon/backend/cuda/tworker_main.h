/* daemon/backend/cuda/tworker_main.h — the tenant worker's program (tworker_main.c). */
#ifndef GPUD_TWORKER_MAIN_H
#define GPUD_TWORKER_MAIN_H

/* `gpud --tenant-worker TENANT`, with gpud's channel as fd 3: the process
 * exit status. */
int tworker_main(int argc, char **argv);

#endif
