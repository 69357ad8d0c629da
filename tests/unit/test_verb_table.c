/*
 * tests/unit/test_verb_table.c — unit tests of the verb table
 * (daemon/verbs/table.h, verbs.def): a row for every Request body field of
 * the protocol's descriptor, under the field's name, in field-number order;
 * the flags the server checks (what it decided by verb name before the
 * table had them); and how /metrics counts a body field with no row.
 */
#include <check.h>
#include <string.h>

#include "daemon/loop.h"
#include "daemon/metrics.h"
#include "daemon/request.h"
#include "daemon/verbs/table.h"
#include "gpud.pb-c.h"
#include "tests/unit/suites.h"

/* 1 if f is one of Request's body fields (the oneof "body"). */
static int is_body_field(const ProtobufCFieldDescriptor *f)
{
	return (f->flags & PROTOBUF_C_FIELD_FLAG_ONEOF) &&
	       f->quantifier_offset == offsetof(Gpud__Request, body_case);
}

START_TEST(test_every_body_field_has_a_row)
{
	const ProtobufCMessageDescriptor *d = &gpud__request__descriptor;
	int fields = 0, last = VERB_NONE;
	for (unsigned i = 0; i < d->n_fields; i++) {
		const ProtobufCFieldDescriptor *f = &d->fields[i];
		if (!is_body_field(f))
			continue;
		fields++;
		int v = verb_index((int)f->id);
		ck_assert_msg(v != VERB_UNKNOWN && v != VERB_NONE, "body field %s (%u) has no row",
			      f->name, f->id);
		ck_assert_str_eq(verb_name(v), f->name);
		ck_assert_str_eq(request_verb_name((int)f->id), f->name);
		ck_assert_int_eq(verb_body(v), (int)f->id);
		ck_assert_msg(v > last, "%s: the rows are not in field-number order", f->name);
		last = v;
	}
	/* and no row without a body field */
	ck_assert_int_eq(fields, VERB_UNKNOWN - VERB_NONE - 1);
	for (int v = VERB_NONE + 1; v < VERB_UNKNOWN; v++) {
		const ProtobufCFieldDescriptor *f =
			protobuf_c_message_descriptor_get_field(d, (unsigned)verb_body(v));
		ck_assert_msg(f && is_body_field(f), "row %s: no body field %d", verb_name(v),
			      verb_body(v));
	}
	ck_assert_int_eq(verb_index(0), VERB_NONE);
	ck_assert_str_eq(verb_name(VERB_NONE), "none");
	ck_assert_ptr_null(request_verb_name(0));
}
END_TEST

/* The rules server.c decided by name: hello and status before hello, and
 * neither counted against requests_in_flight; only status once the GPU
 * context is lost; a Request without a body reaches its handler's
 * refusal before hello; status, free, unmap and cancel served however
 * long gpud drains, hello refused from a drain's start (daemon/drain.c);
 * every other verb none of these. */
START_TEST(test_flags)
{
	for (int v = 0; v < VERB_INDEXES; v++) {
		unsigned want = 0;
		if (v == VERB_HELLO)
			want = VERB_BEFORE_HELLO | VERB_NOT_COUNTED | VERB_OPENS_SESSION;
		else if (v == VERB_STATUS)
			want = VERB_BEFORE_HELLO | VERB_NOT_COUNTED | VERB_ON_LOST_DEVICE |
			       VERB_WHILE_DRAINING;
		else if (v == VERB_FREE || v == VERB_UNMAP || v == VERB_CANCEL)
			want = VERB_WHILE_DRAINING;
		else if (v == VERB_NONE)
			want = VERB_BEFORE_HELLO;
		ck_assert_msg(verb_flags(v) == want, "%s: flags %#x, want %#x", verb_name(v),
			      verb_flags(v), want);
	}
	ck_assert_int_eq(verb_index(GPUD__REQUEST__BODY_HELLO), VERB_HELLO);
	ck_assert_int_eq(verb_index(GPUD__REQUEST__BODY_STATUS), VERB_STATUS);
	ck_assert_uint_eq(verb_flags(-1), 0);
	ck_assert_uint_eq(verb_flags(VERB_INDEXES), 0);
}
END_TEST

/* A request's rules: its verb's, but hello's for a status that carries a
 * hello (it opens a session: refused from a drain's start, not served once
 * the GPU context is lost). */
START_TEST(test_request_flags)
{
	Gpud__Request req = GPUD__REQUEST__INIT;
	Gpud__StatusRequest st = GPUD__STATUS_REQUEST__INIT;
	Gpud__HelloRequest h = GPUD__HELLO_REQUEST__INIT;
	Gpud__RunRequest run = GPUD__RUN_REQUEST__INIT;

	ck_assert_uint_eq(verb_request_flags(&req), VERB_BEFORE_HELLO); /* no body */
	req.body_case = GPUD__REQUEST__BODY_STATUS;
	req.status = &st;
	ck_assert_uint_eq(verb_request_flags(&req), verb_flags(VERB_STATUS));
	ck_assert(verb_request_flags(&req) & VERB_WHILE_DRAINING);
	st.hello = &h;
	ck_assert_uint_eq(verb_request_flags(&req), verb_flags(VERB_HELLO));
	ck_assert(verb_request_flags(&req) & VERB_OPENS_SESSION);
	ck_assert(!(verb_request_flags(&req) & (VERB_WHILE_DRAINING | VERB_ON_LOST_DEVICE)));
	req.body_case = GPUD__REQUEST__BODY_RUN;
	req.run = &run;
	ck_assert_uint_eq(verb_request_flags(&req), 0);
}
END_TEST

/* A body field without a row (or an index out of range) counts under
 * verb="unknown", apart from every verb and from "none". */
START_TEST(test_unknown_field_in_metrics)
{
	static metrics m;
	tenant_metrics t = {0};
	loop_thread_set();
	memset(&m, 0, sizeof(m));
	ck_assert_int_eq(verb_index(99), VERB_UNKNOWN);
	ck_assert_int_eq(verb_index(32), VERB_UNKNOWN); /* once counted as "none" */
	ck_assert_str_eq(verb_name(VERB_UNKNOWN), "unknown");
	ck_assert_ptr_null(request_verb_name(99));

	metrics_request(&m, &t, verb_index(99), ST_OK, 1, 2, 0.5);
	metrics_request(&m, &t, 1000, ST_INVALID, 0, 0, 0.25); /* out of range */
	metrics_request(&m, NULL, verb_index(0), ST_PROTOCOL, 0, 0, 0.125);
	metrics_request(&m, &t, verb_index(GPUD__REQUEST__BODY_RUN), ST_OK, 0, 0, 0.0625);

	ck_assert_uint_eq(t.requests[VERB_UNKNOWN][ST_OK], 1);
	ck_assert_uint_eq(t.requests[VERB_UNKNOWN][ST_INVALID], 1);
	ck_assert_uint_eq(t.requests[VERB_RUN][ST_OK], 1);
	ck_assert_uint_eq(m.no_tenant.requests[VERB_NONE][ST_PROTOCOL], 1);
	for (int s = 0; s < METRICS_STATUSES; s++)
		ck_assert_uint_eq(t.requests[VERB_NONE][s], 0);
	ck_assert_uint_eq(m.request_seconds[VERB_UNKNOWN].count, 2);
	ck_assert(m.request_seconds[VERB_UNKNOWN].sum == 0.75);
	ck_assert_uint_eq(m.request_seconds[VERB_NONE].count, 1);
	ck_assert_uint_eq(m.request_seconds[VERB_RUN].count, 1);
	ck_assert_uint_eq(t.upload_bytes, 1);
	ck_assert_uint_eq(t.download_bytes, 2);
}
END_TEST

Suite *verb_table_suite(void)
{
	Suite *s = suite_create("verb_table");
	TCase *tc = tcase_create("verb_table");
	tcase_add_test(tc, test_every_body_field_has_a_row);
	tcase_add_test(tc, test_flags);
	tcase_add_test(tc, test_request_flags);
	tcase_add_test(tc, test_unknown_field_in_metrics);
	suite_add_tcase(s, tc);
	return s;
}
