/*
 * tests/nss/pw_record.c — a slow, recorded user database for tests: built
 * as $(BUILD)/tests/libpw-record.so and preloaded into gpud (LD_PRELOAD) by
 * the e2e case user_lookup. Its getpwuid_r appends a line to the file
 * $GPUD_PW_RECORD, "main UID" when called on the process's main thread
 * (gpud's loop) and "other UID" on any other, waits $GPUD_PW_DELAY_MS (as
 * sssd or LDAP can), then answers as libc's does.
 *
 * Threads: any (gpud's); state is libc's function, found once (an atomic
 * pointer), and the record's lines, each one write(2) with O_APPEND.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

typedef int (*getpwuid_r_fn)(uid_t, struct passwd *, char *, size_t, struct passwd **);

int getpwuid_r(uid_t uid, struct passwd *pw, char *buf, size_t len, struct passwd **res)
{
	static getpwuid_r_fn libc_fn;
	getpwuid_r_fn real = __atomic_load_n(&libc_fn, __ATOMIC_ACQUIRE);
	if (real == NULL) {
		real = (getpwuid_r_fn)dlsym(RTLD_NEXT, "getpwuid_r");
		__atomic_store_n(&libc_fn, real, __ATOMIC_RELEASE);
	}
	const char *path = getenv("GPUD_PW_RECORD"), *delay = getenv("GPUD_PW_DELAY_MS");
	if (path) {
		char line[64];
		int n = snprintf(line, sizeof(line), "%s %u\n",
				 syscall(SYS_gettid) == getpid() ? "main" : "other", (unsigned)uid);
		int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
		if (fd >= 0) {
			if (write(fd, line, (size_t)n) != n)
				n = -1; /* the test then finds a line missing */
			close(fd);
		}
	}
	if (delay) {
		long ms = atol(delay);
		struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
		while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
			;
	}
	if (real == NULL) {
		*res = NULL;
		return ENOSYS;
	}
	return real(uid, pw, buf, len, res);
}
