/*
 * tests/install/program.c — a program built against an installed
 * libgpud-client by tests/install_check.sh, dynamically and statically,
 * with the flags pkg-config gives. usage: program VERSION
 *
 * Checks that the library it runs with, the headers it was built with and
 * VERSION (the Makefile's) agree. With $GPUD_URL set it also connects,
 * checks gpud's version and sums an array with gpud_call. Prints what it
 * checked; exits 1 naming the first mismatch.
 */
#include <gpud/client.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int fail(const char *what, const char *got, const char *want)
{
	fprintf(stderr, "program: %s is \"%s\", expected \"%s\"\n", what, got, want);
	return 1;
}

static int sum_in_gpud(const char *url)
{
	double x[] = {1.0, 2.0, 3.0, 4.5};
	gpud_array in = {
		.dtype = GPUD_F64, .ndim = 1, .shape = {4}, .data = x, .nbytes = sizeof(x)};
	gpud_arg arg = gpud_arg_array("x", &in);
	gpud_result out;
	size_t nout = 0;
	gpud_client *c;
	int rc = 1;

	if (gpud_connect(url, &c) != GPUD_OK) {
		fprintf(stderr, "program: connect %s: %s\n", url, gpud_errmsg(c));
		gpud_close(c);
		return 1;
	}
	const gpud_server_info *info = gpud_server(c);
	if (strcmp(info->version, gpud_version()) != 0) {
		rc = fail("gpud's version", info->version, gpud_version());
	} else if (gpud_call(c, "sum", &arg, 1, &out, 1, &nout, NULL) != GPUD_OK) {
		fprintf(stderr, "program: sum: %s\n", gpud_errmsg(c));
	} else {
		double s = out.array.nbytes == sizeof(double) ? *(double *)out.array.data : -1;
		if (nout != 1 || out.array.dtype != GPUD_F64 || s != 10.5) {
			fprintf(stderr,
				"program: sum gave %zu outputs, %s, %g; expected 1, float64, 10.5\n",
				nout, gpud_dtype_name(out.array.dtype), s);
		} else {
			printf("gpud %s (%s backend) at %s: sum = %g\n", info->version,
			       info->backend, url, s);
			rc = 0;
		}
		gpud_array_free(&out.array);
	}
	gpud_close(c);
	return rc;
}

int main(int argc, char **argv)
{
	char number[16], want[16];

	if (argc != 2) {
		fprintf(stderr, "usage: program VERSION\n");
		return 2;
	}
	if (strcmp(gpud_version(), argv[1]) != 0)
		return fail("gpud_version()", gpud_version(), argv[1]);
	if (strcmp(GPUD_VERSION_STRING, argv[1]) != 0)
		return fail("GPUD_VERSION_STRING", GPUD_VERSION_STRING, argv[1]);
	snprintf(number, sizeof(number), "%d", gpud_version_number());
	snprintf(want, sizeof(want), "%d", GPUD_VERSION_NUMBER);
	if (strcmp(number, want) != 0)
		return fail("gpud_version_number()", number, want);
	printf("libgpud-client %s (%s), headers %s\n", gpud_version(), number, GPUD_VERSION_STRING);
	const char *url = getenv("GPUD_URL");
	return url != NULL ? sum_in_gpud(url) : 0;
}
