/*
 * client/gpuctl/url.c — which URL gpuctl connects to (--url, then
 * $GPUD_URL, then the default) and where it came from, and, when gpud is
 * not reachable there, the hints that say how to start gpud or point
 * gpuctl at one. Under errors.c, which prints the hints after an error.
 * gpuctl's one thread.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/gpuctl/gpuctl.h"

const char *ctl_url(const char **from)
{
	const char *env = getenv("GPUD_URL");
	if (opt.url && opt.url[0]) {
		*from = "--url";
		return opt.url;
	}
	if (env && env[0]) {
		*from = "$GPUD_URL";
		return env;
	}
	*from = "the default";
	return GPUD_DEFAULT_URL;
}

void hint_unreachable(const char *url)
{
	const char *from;
	const char *tried = ctl_url(&from);

	progress_break_line();
	if (!strcmp(url, tried))
		fprintf(stderr, "gpuctl: hint: %s is %s%s\n", url,
			!strcmp(from, "the default") ? "the default URL" : "from ",
			!strcmp(from, "the default") ? " (neither --url nor $GPUD_URL is set)"
						     : from);
	if (strchr(url, ',')) { /* a list of endpoints: each was tried in order */
		fprintf(stderr,
			"gpuctl: hint: every endpoint of the list was tried, in order; "
			"start gpud on one of them ('gpud --listen URL'),\n"
			"gpuctl: hint: or point gpuctl at a running gpud: --url URL[,URL]..., "
			"or GPUD_URL=URL[,URL]...\n");
		return;
	}
	fprintf(stderr,
		"gpuctl: hint: start gpud: 'systemctl start gpud' where it is installed as a "
		"service,\n"
		"gpuctl: hint:   or 'gpud --listen %s'\n"
		"gpuctl: hint:   ('make demo' in gpud's source tree runs one on a temporary socket)\n"
		"gpuctl: hint: or point gpuctl at a running gpud: --url URL, or GPUD_URL=URL\n",
		url);
}
