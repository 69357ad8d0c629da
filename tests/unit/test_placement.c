/*
 * tests/unit/test_placement.c — daemon/placement.c on a device set made by
 * hand (no backend): least load, its ties, tenant affinity, lost devices,
 * and a run's device from its buffers (outputs first, then most input
 * bytes, pinned and lost buffers refused with the names in the message).
 */
#include <check.h>
#include <string.h>

#include "daemon/placement.h"
#include "tests/unit/suites.h"

static device_set ds;
static gpud_tenant tn;

static void setup(void)
{
	memset(&ds, 0, sizeof(ds));
	memset(&tn, 0, sizeof(tn));
	ds.n = ds.nlive = 3;
	for (int i = 0; i < 3; i++) {
		ds.dev[i].id = 10 + i; /* ids are not slots */
		ds.dev[i].slot = i;
		ds.dev[i].set = &ds;
	}
}

static void lose(int slot)
{
	ds.dev[slot].lost = 1;
	snprintf(ds.dev[slot].lost_msg, sizeof(ds.dev[slot].lost_msg), "an illegal address");
	ds.nlive--;
}

START_TEST(test_least_loaded)
{
	/* idle: fewest bytes of buffers, then the lower slot */
	ck_assert_ptr_eq(place_fresh(&ds, NULL), &ds.dev[0]);
	ds.dev[0].bytes = 100;
	ds.dev[1].bytes = 50;
	ds.dev[2].bytes = 70;
	ck_assert_ptr_eq(place_fresh(&ds, &tn), &ds.dev[1]);
	/* runs weigh first: one queued run outweighs any bytes of buffers */
	ds.dev[1].runs = 1;
	ck_assert_ptr_eq(place_fresh(&ds, &tn), &ds.dev[2]);
	/* copies in flight count at PLACE_BYTES_PER_RUN a run */
	ds.dev[2].bytes_moving = 2 * PLACE_BYTES_PER_RUN;
	ck_assert_ptr_eq(place_fresh(&ds, &tn), &ds.dev[0]);
	ck_assert_double_eq(place_load(&ds.dev[2]), 2.0);
	ds.dev[0].runs = 3;
	ck_assert_ptr_eq(place_fresh(&ds, &tn), &ds.dev[1]);
	/* lost devices are never chosen; none left: NULL */
	lose(1);
	ck_assert_ptr_eq(place_fresh(&ds, &tn), &ds.dev[2]);
	lose(2);
	lose(0);
	ck_assert_ptr_null(place_fresh(&ds, &tn));
}
END_TEST

START_TEST(test_affinity)
{
	ds.dev[2].runs = 50; /* busy, yet the tenant's buffers are there */
	tn.aff_nbuffers[2] = 1;
	tn.aff_bytes[2] = 10;
	tn.aff_nbuffers[0] = 2;
	tn.aff_bytes[0] = 5;
	tn.dev_nbuffers[1] = 9; /* a request's temporaries: no affinity */
	tn.dev_bytes[1] = 900;
	ck_assert_ptr_eq(place_fresh(&ds, &tn), &ds.dev[2]); /* most of its bytes */
	lose(2);
	ck_assert_ptr_eq(place_fresh(&ds, &tn), &ds.dev[0]);
	tn.aff_nbuffers[0] = 0; /* none left there: least loaded again */
	tn.aff_bytes[0] = 0;
	ds.dev[0].runs = 1;
	ck_assert_ptr_eq(place_fresh(&ds, &tn), &ds.dev[1]);
}
END_TEST

static gpud_buffer buf(int slot, size_t nbytes, int pinned)
{
	gpud_buffer b;
	memset(&b, 0, sizeof(b));
	b.dev = &ds.dev[slot];
	b.nbytes = nbytes;
	b.pinned = pinned;
	return b;
}

START_TEST(test_run_device)
{
	char why[512];
	dstatus st = ST_OK;
	gpud_buffer x = buf(0, 100, 0), y = buf(1, 300, 0), z = buf(2, 8, 0), p = buf(2, 8, 1);
	place_arg in2[] = {{"x", &x, 0}, {"y", &y, 0}};
	/* most input bytes */
	ck_assert_ptr_eq(place_run(&ds, &tn, NULL, in2, 2, &st, why, sizeof(why)), &ds.dev[1]);
	/* an output buffer decides */
	place_arg withz[] = {{"x", &x, 0}, {"y", &y, 0}, {"z", &z, 1}};
	ck_assert_ptr_eq(place_run(&ds, &tn, NULL, withz, 3, &st, why, sizeof(why)), &ds.dev[2]);
	/* named: that device */
	ck_assert_ptr_eq(place_run(&ds, &tn, &ds.dev[0], in2, 2, &st, why, sizeof(why)),
			 &ds.dev[0]);
	/* no buffers: fresh work (least loaded) */
	ds.dev[0].runs = 2;
	ck_assert_ptr_eq(place_run(&ds, &tn, NULL, NULL, 0, &st, why, sizeof(why)), &ds.dev[1]);
	/* a pinned input elsewhere */
	place_arg pin[] = {{"x", &x, 0}, {"y", &y, 0}, {"w", &p, 0}};
	ck_assert_ptr_null(place_run(&ds, &tn, NULL, pin, 3, &st, why, sizeof(why)));
	ck_assert_msg(strstr(why, "argument 'w' is pinned to device 12, and the run goes to "
				  "device 11"),
		      "%s", why);
	ck_assert_int_eq(st, ST_INVALID);
	/* outputs on two devices */
	gpud_buffer z0 = buf(0, 8, 0);
	place_arg two[] = {{"z", &z, 1}, {"z2", &z0, 1}};
	ck_assert_ptr_null(place_run(&ds, &tn, NULL, two, 2, &st, why, sizeof(why)));
	ck_assert_msg(strstr(why, "outputs 'z' (device 12) and 'z2' (device 10)"), "%s", why);
	/* an output elsewhere than the named device */
	place_arg outz[] = {{"z", &z, 1}};
	ck_assert_ptr_null(place_run(&ds, &tn, &ds.dev[1], outz, 1, &st, why, sizeof(why)));
	ck_assert_msg(strstr(why, "output 'z' is on device 12, and the run was asked to run on "
				  "device 11"),
		      "%s", why);
	/* a lost device's buffer */
	lose(1);
	ck_assert_ptr_null(place_run(&ds, &tn, NULL, in2, 2, &st, why, sizeof(why)));
	ck_assert_msg(strstr(why, "argument 'y' is on device 11, which is lost (an illegal "
				  "address)"),
		      "%s", why);
	ck_assert_int_eq(st, ST_BACKEND);
}
END_TEST

Suite *placement_suite(void)
{
	Suite *s = suite_create("placement");
	TCase *tc = tcase_create("placement");
	tcase_add_checked_fixture(tc, setup, NULL);
	tcase_add_test(tc, test_least_loaded);
	tcase_add_test(tc, test_affinity);
	tcase_add_test(tc, test_run_device);
	suite_add_tcase(s, tc);
	return s;
}
