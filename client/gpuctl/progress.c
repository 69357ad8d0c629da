/*
 * client/gpuctl/progress.c — what gpuctl draws on stderr while it waits: a
 * progress bar for transfers (bytes, percent, rate) and an elapsed-time
 * spinner for runs. Drawn only when stderr is a terminal and -q is not given,
 * and only once the work has taken $GPUCTL_PROGRESS_DELAY seconds (default
 * 1); redrawn at most ten times a second, on one line that ends with the
 * final state (whether its line is open is state.c's, which every message
 * ends first). Also sizes for people ("1.5 MiB").
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "client/gpuctl/gpuctl.h"

/* $GPUCTL_PROGRESS_DELAY, read once at start (progress_init). */
static double delay = 1.0;

void progress_init(void)
{
	const char *e = getenv("GPUCTL_PROGRESS_DELAY");
	if (e && e[0])
		delay = parse_seconds(NULL, "$GPUCTL_PROGRESS_DELAY", e, 0, 3600);
}

int progress_possible(void)
{
	return !opt.quiet && isatty(2);
}

static int columns(void)
{
	struct winsize ws;
	if (ioctl(2, TIOCGWINSZ, &ws) == 0 && ws.ws_col >= 20)
		return ws.ws_col;
	return 80;
}

static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};

const char *human_bytes(uint64_t b, char *buf, size_t len)
{
	double v = (double)b;
	int u = 0;
	while (v >= 1024 && u < 4) {
		v /= 1024;
		u++;
	}
	snprintf(buf, len, u ? "%.1f %s" : "%.0f %s", v, units[u]);
	return units[u];
}

/* b in unit ("MiB"), without the unit: "128.0". */
static void in_unit(uint64_t b, const char *unit, char *buf, size_t len)
{
	double v = (double)b;
	int u = 0;
	while (u < 4 && strcmp(units[u], unit) != 0) {
		v /= 1024;
		u++;
	}
	snprintf(buf, len, u ? "%.1f" : "%.0f", v);
}

static void draw(progress *p, double t, int final)
{
	char tail[160], line[512];
	double el = t - p->t0;

	if (p->total == 0) {
		static const char spin[] = "|/-\\";
		if (final)
			snprintf(tail, sizeof(tail), " done in %.1f s", el);
		else
			snprintf(tail, sizeof(tail), " %c %.1f s", spin[p->ticks++ % 4], el);
	} else {
		char done[32], total[32], rate[32], bar[11];
		int pct = (int)(p->done * 100 / p->total);
		int fill = (int)(p->done * 10 / p->total);
		for (int i = 0; i < 10; i++)
			bar[i] = i < fill ? '#' : '.';
		bar[10] = '\0';
		const char *unit = human_bytes(p->total, total, sizeof(total));
		in_unit(p->done, unit, done, sizeof(done));
		human_bytes(el > 0 ? (uint64_t)((double)p->done / el) : 0, rate, sizeof(rate));
		snprintf(tail, sizeof(tail), " [%s] %3d%% %s/%s %s/s", bar, pct, done, total, rate);
		if (final)
			snprintf(tail + strlen(tail), sizeof(tail) - strlen(tail), " in %.1f s",
				 el);
	}
	/* One terminal line: a label too long loses its start. */
	int room = columns() - 1 - (int)strlen("gpuctl: ") - (int)strlen(p->verb) - 1 -
		   (int)strlen(tail);
	const char *label = p->label;
	int ll = (int)strlen(label);
	if (room < 4)
		room = 4;
	if (ll > room)
		snprintf(line, sizeof(line), "gpuctl: %s ...%s%s", p->verb, label + ll - (room - 3),
			 tail);
	else
		snprintf(line, sizeof(line), "gpuctl: %s %s%s", p->verb, label, tail);
	fprintf(stderr, "\r%s\033[K", line);
	fflush(stderr);
	p->shown = 1;
	p->drawn_at = t;
	stderr_line_open(1);
}

void progress_start(progress *p, const char *verb, const char *label, uint64_t total)
{
	memset(p, 0, sizeof(*p));
	p->verb = verb;
	p->label = label;
	p->total = total;
	p->t0 = now_s();
	if (progress_possible() && delay <= 0)
		draw(p, p->t0, 0);
}

void progress_update(progress *p, uint64_t done)
{
	p->done = done;
	if (!progress_possible())
		return;
	double t = now_s();
	if (!p->shown && t - p->t0 < delay)
		return;
	if (p->shown && t - p->drawn_at < 0.1)
		return;
	draw(p, t, 0);
}

void progress_finish(progress *p)
{
	if (!p->shown)
		return;
	p->done = p->total;
	draw(p, now_s(), 1);
	fputc('\n', stderr);
	stderr_line_open(0);
}
