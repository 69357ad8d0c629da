/*
 * daemon/backend/tenant_worker/msg.h — the channel between gpud and a tenant
 * worker: the process in which one tenant's custom kernels run, in a CUDA
 * context of its own (daemon/backend/cuda/tworkers.c starts and drives it,
 * daemon/backend/cuda/tworker_main.c is its program).
 *
 * The channel is an AF_UNIX SOCK_SEQPACKET socketpair: one message per
 * packet, each a tw_msg of the size tw_msg_size gives for its type. A LOAD
 * carries the kernel's cubin as a sealed memfd (SCM_RIGHTS). Both ends
 * decode with tw_msg_decode, which checks every length, count and string, so
 * neither side trusts the other's bytes further than that (the fuzzer feeds
 * it, tests/fuzz/fuzz_request.c).
 *
 * gpud -> worker, in the order gpud sends them (the worker handles them in
 * that order, one at a time):
 *   INIT    the device and the interprocess events runs wait on (first)
 *   LOAD    kernel id, entry name; the cubin's memfd
 *   UNLOAD  kernel id
 *   MAP     map id, a cudaIpcMemHandle_t of one of gpud's allocations
 *   UNMAP   map id: answered with UNMAPPED once the mapping is closed
 *   RUN     slot, seq, kernel id, launch shape, arguments (values, or a map
 *           id and an offset): wait for event[slot], launch, wait for the
 *           kernel, answer DONE
 * worker -> gpud:
 *   READY     the context is made, the events are open (pid)
 *   DONE      slot, seq, the CUDA error (0: none), the kernel's time, a message
 *   UNMAPPED  map id
 *
 * Only plain data here (no CUDA types): this file builds and is fuzzed in
 * builds without CUDA.
 */
#ifndef GPUD_TENANT_WORKER_MSG_H
#define GPUD_TENANT_WORKER_MSG_H

#include <stddef.h>
#include <stdint.h>

#include "kernels/core/kernel.h"

#define TW_SLOTS 128                            /* runs in flight in workers, all of them */
#define TW_MAX_ARGS (3 * KERNEL_MAX_PARAMS + 1) /* as custom kernels take them */
#define TW_HANDLE_BYTES 64                      /* cudaIpcMemHandle_t, cudaIpcEventHandle_t */
#define TW_NAME 64
#define TW_MSG_TEXT 480

typedef enum tw_type {
	TW_INIT = 1,
	TW_LOAD = 2,
	TW_UNLOAD = 3,
	TW_MAP = 4,
	TW_UNMAP = 5,
	TW_RUN = 6,
	TW_READY = 101,
	TW_DONE = 102,
	TW_UNMAPPED = 103,
} tw_type;

typedef struct tw_arg {
	uint32_t map; /* 0: value holds the argument's bytes; else a MAP's id */
	uint32_t pad;
	uint64_t value; /* the value (little-endian, as the kernel reads it), or the offset */
} tw_arg;

typedef struct tw_msg {
	uint32_t type; /* tw_type */
	uint32_t id;   /* LOAD/UNLOAD/RUN: kernel id; MAP/UNMAP/UNMAPPED: map id */
	union {
		struct {
			int32_t device;
			uint32_t nevents; /* = TW_SLOTS */
			uint8_t events[TW_SLOTS][TW_HANDLE_BYTES];
		} init;
		struct {
			char entry[TW_NAME];
			uint64_t code_len; /* bytes of the memfd */
		} load;
		struct {
			uint8_t handle[TW_HANDLE_BYTES];
		} map;
		struct {
			uint32_t slot;
			uint32_t nargs;
			uint64_t seq;
			uint32_t grid, block;
			tw_arg args[TW_MAX_ARGS];
		} run;
		struct {
			int32_t pid;
			uint32_t pad;
			double context_ms, events_ms; /* its start: the context, the events */
		} ready;
		struct {
			uint32_t slot;
			int32_t cuda_error; /* cudaError_t; 0: the kernel ran */
			uint32_t lost;      /* the worker's context is lost: it ends next */
			uint32_t pad;
			uint64_t seq;
			double kernel_us;
			char text[TW_MSG_TEXT]; /* what failed, when cuda_error != 0 */
		} done;
	} u;
} tw_msg;

/* The bytes a message of this type (and run argument count) takes on the
 * channel; 0 for an unknown type. */
size_t tw_msg_size(uint32_t type, uint32_t nargs);

/*
 * Decodes one packet into m (zeroed first). 0, or -1 with err naming what
 * is wrong (an unknown type, a length that does not match the type, a
 * count or slot out of range, a string without its end).
 */
int tw_msg_decode(const void *buf, size_t len, tw_msg *m, char *err, size_t errlen);

/* A type's name for messages: "RUN". */
const char *tw_type_name(uint32_t type);

#endif
