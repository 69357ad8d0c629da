/* tests/unit/suites.h — the Check suites tests/unit/main.c runs, one per file. */
#ifndef GPUD_TESTS_SUITES_H
#define GPUD_TESTS_SUITES_H

#include <check.h>

Suite *npy_suite(void);
Suite *config_suite(void);
Suite *config_reload_suite(void);
Suite *wire_suite(void);
Suite *kernel_table_suite(void);
Suite *kernel_args_suite(void);
Suite *alias_suite(void);
Suite *sample_suite(void);
Suite *custom_suite(void);
Suite *sched_suite(void);
Suite *batch_suite(void);
Suite *registry_suite(void);
Suite *verbs_suite(void);
Suite *verb_table_suite(void);
Suite *ring_suite(void);
Suite *log_suite(void);
Suite *peek_suite(void);
Suite *placement_suite(void);
Suite *hello_guard_suite(void);
Suite *peers_suite(void);
Suite *hostmem_suite(void);
Suite *drain_suite(void);
Suite *client_endpoint_suite(void);
Suite *endpoint_suite(void);
Suite *cpu_backend_suite(void);
/* kernels/<folder>/test_<folder>.c of each folder of kernels/kernels.def */
#define KERNEL_FOLDER(folder) Suite *folder##_suite(void);
#include "kernels/kernels.def"

#endif
