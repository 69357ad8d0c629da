/* tests/suites.h — the Check suites tests/unit_main.c runs, one per file. */
#ifndef GPUD_TESTS_SUITES_H
#define GPUD_TESTS_SUITES_H

#include <check.h>

Suite *npy_suite(void);
Suite *config_suite(void);
Suite *wire_suite(void);
Suite *lombscargle_suite(void);
Suite *kernel_table_suite(void);
Suite *custom_suite(void);
Suite *elementwise_suite(void);
Suite *reduce_suite(void);
Suite *histogram_suite(void);
Suite *matmul_suite(void);
Suite *random_suite(void);
Suite *sched_suite(void);
Suite *registry_suite(void);
Suite *verbs_suite(void);

#endif
