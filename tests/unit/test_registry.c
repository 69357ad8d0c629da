/*
 * tests/unit/test_registry.c — custom kernel registrations (daemon/registry.h)
 * on the cpu backend, which checks and keeps kernels but compiles none: who
 * may register what, names that clash, shared kernels and a tenant's own of
 * the same name, references held by runs, and the copy on disk read back at
 * start.
 */
#include <check.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "daemon/devices.h"
#include "daemon/log.h"
#include "daemon/registry.h"
#include "tests/unit/suites.h"

static uv_loop_t loop;
static gpud_config cfg;
static device_set ds;
static buffer_table bt;
static registry g;
static char cache[64];

static void open_all(void)
{
	char err[256];
	ck_assert_msg(devices_open(&ds, &loop, &cfg, NULL, err, sizeof(err)) == 0, "%s", err);
	buffers_init(&bt, &ds);
	registry_init(&g, &cfg, &ds.dev[0].be, &bt);
}

static void close_all(void)
{
	registry_fini(&g);
	buffers_fini(&bt);
	devices_close(&ds);
}

static void setup(void)
{
	char err[256];
	log_set_level(LOG_ERROR);
	uv_loop_init(&loop);
	config_defaults(&cfg);
	snprintf(cfg.backend, sizeof(cfg.backend), "cpu");
	cfg.cpu_threads = 1;
	snprintf(cache, sizeof(cache), "/tmp/gpud-registry-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(cache));
	ck_assert_int_eq(config_set(&cfg, "kernel_cache", cache, err, sizeof(err)), 0);
	ck_assert_int_eq(config_set(&cfg, "admin_tenants", "root, admin", err, sizeof(err)), 0);
	open_all();
}

static void teardown(void)
{
	char cmd[128];
	close_all();
	uv_loop_close(&loop);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", cache);
	ck_assert_int_eq(system(cmd), 0);
}

static gpud_tenant *tenant(const char *name)
{
	tenant_quota q = config_quota(&cfg, name);
	gpud_tenant *tn = tenants_get(&bt, name, &q);
	ck_assert_ptr_nonnull(tn);
	return tn;
}

/* An elementwise kernel: z = a * x, registered by tn (shared if asked). */
static Gpud__RegisterRequest scale_request(const char *name, int shared)
{
	Gpud__RegisterRequest q = GPUD__REGISTER_REQUEST__INIT;
	q.name = (char *)name;
	q.kind = GPUD__REGISTER_REQUEST__KIND__KIND_ELEMENTWISE;
	q.in_params = "float32 x, float32 a";
	q.out_params = "float32 z";
	q.source = "z = a * x";
	q.shared = shared;
	return q;
}

/* prepare + add, as the register verb does on a backend that compiles nothing. */
static dstatus add(gpud_tenant *tn, const Gpud__RegisterRequest *q, char *err, size_t errlen)
{
	dstatus st;
	custom_entry *e = registry_prepare(&g, tn, q, &st, err, errlen);
	if (e == NULL)
		return st;
	ck_assert(!registry_compiles(&g));
	st = registry_add(&g, tn, e, q, err, errlen);
	if (st != ST_OK)
		registry_unref(e);
	return st;
}

START_TEST(test_register_find_remove)
{
	gpud_tenant *ann = tenant("ann"), *bob = tenant("bob");
	Gpud__RegisterRequest q = scale_request("scale", 0);
	char err[512], path[PATH_MAX];

	ck_assert_int_eq(add(ann, &q, err, sizeof(err)), ST_OK);
	/* Kept on disk, under the tenant. */
	snprintf(path, sizeof(path), "%s/tenants/ann/scale.reg", cache);
	ck_assert_int_eq(access(path, R_OK), 0);
	/* Ann's, not Bob's: another tenant may use the name too. */
	custom_entry *e = registry_find(&g, ann, "scale");
	ck_assert_ptr_nonnull(e);
	ck_assert_str_eq(e->k.def.name, "scale");
	ck_assert_int_eq(e->k.def.nparams, 3);
	ck_assert_str_eq(e->k.doc, "custom elementwise kernel");
	ck_assert_ptr_null(registry_find(&g, bob, "scale"));
	ck_assert_int_eq(add(bob, &q, err, sizeof(err)), ST_OK);
	/* Twice is refused, naming the way out. */
	ck_assert_int_eq(add(ann, &q, err, sizeof(err)), ST_INVALID);
	ck_assert_str_eq(err, "register: kernel 'scale' is registered already; remove it first "
			      "(gpuctl kernel rm scale)");
	/* A run holds it: removing only takes it out of reach. */
	ck_assert_int_eq(registry_remove(&g, ann, 0, "scale", err, sizeof(err)), ST_OK);
	ck_assert_int_eq(e->refs, 1);
	ck_assert_ptr_null(registry_find(&g, ann, "scale"));
	ck_assert_int_eq(access(path, F_OK), -1);
	registry_unref(e); /* the run's reply */
	ck_assert_int_eq(registry_remove(&g, ann, 0, "scale", err, sizeof(err)), ST_UNKNOWN_KERNEL);
	ck_assert_str_eq(err, "unregister: no kernel 'scale' among ann");
	ck_assert_int_eq(registry_remove(&g, ann, 0, "histogram", err, sizeof(err)),
			 ST_UNKNOWN_KERNEL);
	ck_assert_str_eq(err,
			 "unregister: no kernel 'histogram' among ann (built-in kernels stay)");
}
END_TEST

START_TEST(test_refusals)
{
	gpud_tenant *ann = tenant("ann");
	char err[512];
	dstatus st;

	Gpud__RegisterRequest q = scale_request("histogram", 0);
	ck_assert_ptr_null(registry_prepare(&g, ann, &q, &st, err, sizeof(err)));
	ck_assert_int_eq(st, ST_INVALID);
	ck_assert_str_eq(err, "register: 'histogram' is a built-in kernel; pick another name");

	q = scale_request("shared_scale", 1);
	ck_assert_ptr_null(registry_prepare(&g, ann, &q, &st, err, sizeof(err)));
	ck_assert_int_eq(st, ST_UNAUTHENTICATED);
	ck_assert_str_eq(err, "register shared_scale: shared kernels are for administrators; "
			      "tenant ann is not in admin_tenants");

	q = scale_request("bad", 0);
	q.in_params = "float16 x";
	ck_assert_ptr_null(registry_prepare(&g, ann, &q, &st, err, sizeof(err)));
	ck_assert_int_eq(st, ST_INVALID);
	ck_assert_msg(strncmp(err, "register bad: input parameters: ", 32) == 0, "%s", err);

	q = scale_request("9lives", 0);
	ck_assert_ptr_null(registry_prepare(&g, ann, &q, &st, err, sizeof(err)));
	ck_assert_int_eq(st, ST_INVALID);
	ck_assert_msg(strstr(err, "kernel name '9lives'") != NULL, "%s", err);
}
END_TEST

START_TEST(test_shared_and_own)
{
	gpud_tenant *admin = tenant("admin"), *ann = tenant("ann"), *bob = tenant("bob");
	char err[512], path[PATH_MAX];
	const kernel_def *seen[8];

	Gpud__RegisterRequest own = scale_request("scale", 0);
	ck_assert_int_eq(add(ann, &own, err, sizeof(err)), ST_OK);
	Gpud__RegisterRequest sh = scale_request("scale", 1);
	ck_assert_int_eq(add(admin, &sh, err, sizeof(err)), ST_OK);
	snprintf(path, sizeof(path), "%s/shared/scale.reg", cache);
	ck_assert_int_eq(access(path, R_OK), 0);
	/* Bob sees the shared one; Ann's own comes first for her. */
	custom_entry *b = registry_find(&g, bob, "scale"), *a = registry_find(&g, ann, "scale");
	ck_assert(b->shared);
	ck_assert(!a->shared);
	ck_assert_str_eq(b->k.doc, "shared elementwise kernel");
	registry_unref(a);
	registry_unref(b);
	ck_assert_uint_eq(registry_visible(&g, ann, seen, 8), 1);
	ck_assert_ptr_eq(seen[0], &a->k.def);
	ck_assert_uint_eq(registry_visible(&g, bob, seen, 8), 1);
	/* A tenant cannot take a shared kernel's name. */
	Gpud__RegisterRequest again = scale_request("scale", 0);
	ck_assert_int_eq(add(bob, &again, err, sizeof(err)), ST_INVALID);
	ck_assert_str_eq(err, "register: 'scale' is a shared kernel; pick another name");
	/* Only administrators remove shared kernels. */
	ck_assert_int_eq(registry_remove(&g, ann, 1, "scale", err, sizeof(err)),
			 ST_UNAUTHENTICATED);
	ck_assert_int_eq(registry_remove(&g, admin, 1, "scale", err, sizeof(err)), ST_OK);
	ck_assert_int_eq(access(path, F_OK), -1);
	char names[64];
	registry_names(ann, names, sizeof(names));
	ck_assert_str_eq(names, ", scale");
}
END_TEST

/* What was registered comes back after a restart, from the files alone. */
START_TEST(test_kept_across_restarts)
{
	char err[512];
	Gpud__RegisterRequest own = scale_request("scale", 0), sh = scale_request("twice", 1);
	ck_assert_int_eq(add(tenant("ann"), &own, err, sizeof(err)), ST_OK);
	ck_assert_int_eq(add(tenant("root"), &sh, err, sizeof(err)), ST_OK);
	close_all();
	open_all();
	ck_assert_ptr_null(bt.tenants);
	registry_load(&g);
	gpud_tenant *ann = tenant("ann");
	custom_entry *e = registry_find(&g, ann, "scale");
	ck_assert_ptr_nonnull(e);
	ck_assert(!e->shared);
	registry_unref(e);
	e = registry_find(&g, tenant("carol"), "twice");
	ck_assert_ptr_nonnull(e);
	ck_assert(e->shared);
	registry_unref(e);
	/* An unreadable file is passed over, the others load. */
	char path[PATH_MAX];
	snprintf(path, sizeof(path), "%s/tenants/ann/broken.reg", cache);
	FILE *f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	fputs("not a registration", f);
	fclose(f);
	close_all();
	open_all();
	registry_load(&g);
	ck_assert_uint_eq(registry_visible(&g, tenant("ann"), NULL, 0), 2);
}
END_TEST

/* An unpinned registration (as the Python package's auto-registration makes). */
static void add_named(gpud_tenant *tn, const char *name, int unpinned)
{
	char err[512];
	Gpud__RegisterRequest q = scale_request(name, 0);
	q.unpinned = unpinned;
	ck_assert_msg(add(tn, &q, err, sizeof(err)) == ST_OK, "%s: %s", name, err);
}

static int has(gpud_tenant *tn, const char *name)
{
	custom_entry *e = NULL;
	HASH_FIND_STR(tn->customs, name, e);
	return e != NULL;
}

static int reg_file(const char *tenant_name, const char *name)
{
	char path[PATH_MAX];
	snprintf(path, sizeof(path), "%s/tenants/%s/%s.reg", cache, tenant_name, name);
	return access(path, F_OK) == 0;
}

/* A run of name: its last use now. */
static void use(gpud_tenant *tn, const char *name)
{
	custom_entry *e = registry_find(&g, tn, name);
	ck_assert_ptr_nonnull(e);
	registry_unref(e);
}

START_TEST(test_lru_eviction)
{
	char err[1024];
	cfg.quota.custom_kernels = 3;
	gpud_tenant *ann = tenant("ann"), *bob = tenant("bob");

	add_named(ann, "k0", 0); /* pinned: never evicted */
	add_named(ann, "k1", 1);
	add_named(ann, "k2", 1);
	add_named(bob, "b0", 1); /* bob's: never evicted for ann */
	use(ann, "k1");          /* k2 is now the least recently used unpinned one */
	add_named(ann, "k3", 1);
	ck_assert(!has(ann, "k2") && !reg_file("ann", "k2"));
	ck_assert(has(ann, "k0") && has(ann, "k1") && has(ann, "k3") && has(bob, "b0"));
	ck_assert(reg_file("ann", "k1") && reg_file("ann", "k3"));
	ck_assert_uint_eq(ann->metrics.custom_evicted, 1);
	ck_assert_uint_eq(bob->metrics.custom_evicted, 0);

	/* k1 (least recently used) has a run in flight: k3 goes instead. */
	custom_entry *running = registry_find(&g, ann, "k1");
	use(ann, "k3");
	add_named(ann, "k4", 0);
	ck_assert(!has(ann, "k3") && has(ann, "k1") && has(ann, "k4"));
	/* Now k0, k4 pinned, k1 running: nothing can be evicted. */
	Gpud__RegisterRequest q = scale_request("k5", 0);
	ck_assert_int_eq(add(ann, &q, err, sizeof(err)), ST_QUOTA);
	ck_assert_str_eq(
		err,
		"register k5: tenant ann has 3 custom kernels, at the custom_kernels quota of 3, "
		"and 0 of them could be evicted (unpinned, not running): remove some "
		"(gpuctl kernels --custom lists them; gpuctl kernel rm NAME), register "
		"kernels unpinned (gpuctl kernel add --unpinned), or raise custom_kernels "
		"in gpud.conf ([quota] or [tenant ann])");
	ck_assert_uint_eq(ann->metrics.quota_refused[QUOTA_KERNELS], 1);
	registry_unref(running); /* the run answered: k1 may go */
	add_named(ann, "k5", 1);
	ck_assert(!has(ann, "k1") && has(ann, "k0") && has(ann, "k4") && has(ann, "k5"));
	ck_assert_uint_eq(ann->metrics.custom_evicted, 3);
	ck_assert_uint_eq(HASH_COUNT(bob->customs), 1);

	/* Pinned or not is kept on disk; a restart loads both. */
	close_all();
	open_all();
	registry_load(&g);
	ann = tenant("ann");
	custom_entry *e;
	HASH_FIND_STR(ann->customs, "k0", e);
	ck_assert(e && e->pinned && e->last_used > 0);
	HASH_FIND_STR(ann->customs, "k5", e);
	ck_assert(e && !e->pinned);

	/* A cap lowered (reload) below what a tenant holds: as many evicted as it takes. */
	add_named(ann, "k6", 1); /* evicts k5 */
	ck_assert(!has(ann, "k5") && !reg_file("ann", "k5"));
	ck_assert_int_eq(registry_remove(&g, ann, 0, "k4", err, sizeof(err)), ST_OK);
	add_named(ann, "k7", 1); /* room: nothing evicted */
	ck_assert(has(ann, "k0") && has(ann, "k6") && has(ann, "k7"));
	ann->quota.custom_kernels = 2;
	add_named(ann, "k8", 1); /* k6 and k7 go */
	ck_assert_uint_eq(HASH_COUNT(ann->customs), 2);
	ck_assert(has(ann, "k0") && has(ann, "k8"));
	ck_assert(!reg_file("ann", "k6") && !reg_file("ann", "k7") && reg_file("ann", "k8"));
}
END_TEST

Suite *registry_suite(void)
{
	Suite *s = suite_create("registry");
	TCase *tc = tcase_create("registry");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_register_find_remove);
	tcase_add_test(tc, test_refusals);
	tcase_add_test(tc, test_shared_and_own);
	tcase_add_test(tc, test_kept_across_restarts);
	tcase_add_test(tc, test_lru_eviction);
	suite_add_tcase(s, tc);
	return s;
}
