/*
 * client/version.c — gpud_version() and gpud_version_number(): the version
 * of the library a program runs with, from gpud/version.h as it was built.
 */
#include <gpud/version.h>

const char *gpud_version(void)
{
	return GPUD_VERSION_STRING;
}

int gpud_version_number(void)
{
	return GPUD_VERSION_NUMBER;
}
