/*
 * client/endpoint/access.c — why a Unix socket of gpud refused this
 * process (connect failed with EACCES; nng's ipc:// dialer reports it as
 * NNG_EPERM): the socket's mode, owner and group, and what to ask for.
 * Never "is gpud running?": gpud is there, the file's permissions keep
 * this user out. The ipc row's cause of a failed dial (ipc.c), and the
 * region socket's (shm.c).
 *
 * Reads only the file system and the process's credentials, and keeps no
 * state: any thread.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "client/endpoint/endpoint.h"
#include "client/internal.h"

/* A uid's or gid's name, else its number. */
static void user_name(uid_t uid, char *out, size_t len)
{
	struct passwd pw, *res = NULL;
	char buf[4096];
	if (getpwuid_r(uid, &pw, buf, sizeof(buf), &res) == 0 && res)
		snprintf(out, len, "%s", pw.pw_name);
	else
		snprintf(out, len, "%u", (unsigned)uid);
}

static void group_name(gid_t gid, char *out, size_t len)
{
	struct group gr, *res = NULL;
	char buf[16384];
	if (getgrgid_r(gid, &gr, buf, sizeof(buf), &res) == 0 && res)
		snprintf(out, len, "%s", gr.gr_name);
	else
		snprintf(out, len, "%u", (unsigned)gid);
}

/* 1 if this process has gid among its groups (effective or supplementary). */
static int process_in_group(gid_t gid)
{
	gid_t groups[256];
	if (getegid() == gid)
		return 1;
	int n = getgroups(256, groups);
	for (int i = 0; i < n; i++)
		if (groups[i] == gid)
			return 1;
	return 0;
}

/* 1 if the user database puts this process's user in gid (its primary
 * group, or a member in the group file): added, but not in this login yet. */
static int user_listed_in_group(gid_t gid)
{
	struct passwd pw, *pres = NULL;
	struct group gr, *gres = NULL;
	char pbuf[4096], gbuf[16384];
	if (getpwuid_r(geteuid(), &pw, pbuf, sizeof(pbuf), &pres) != 0 || pres == NULL)
		return 0;
	if (pw.pw_gid == gid)
		return 1;
	if (getgrgid_r(gid, &gr, gbuf, sizeof(gbuf), &gres) != 0 || gres == NULL)
		return 0;
	for (char **m = gr.gr_mem; m && *m; m++)
		if (strcmp(*m, pw.pw_name) == 0)
			return 1;
	return 0;
}

/* "(mode 0660 owner gpud group gpud)" of st, into out. */
static void describe(const struct stat *st, char *out, size_t len)
{
	char owner[64], group[64];
	user_name(st->st_uid, owner, sizeof(owner));
	group_name(st->st_gid, group, sizeof(group));
	snprintf(out, len, "(mode %04o owner %s group %s)", (unsigned)(st->st_mode & 07777), owner,
		 group);
}

/* What this user should ask for to pass st (write permission for a socket,
 * search permission, x, for a directory), into out. */
static void remedy(const struct stat *st, int dir, char *out, size_t len)
{
	char group[64], me[64];
	const mode_t gbit = dir ? S_IXGRP : S_IWGRP;
	group_name(st->st_gid, group, sizeof(group));
	user_name(geteuid(), me, sizeof(me));
	if (!(st->st_mode & gbit) && dir)
		snprintf(out, len,
			 "only its owner may enter it; ask gpud's administrator to open it to "
			 "others (mode 0755, as gpud.service's RuntimeDirectoryMode= does)");
	else if (!(st->st_mode & gbit))
		snprintf(out, len,
			 "only its owner may connect; ask gpud's administrator to set "
			 "socket_mode = 0660 and socket_group in gpud.conf (as the shipped "
			 "gpud.conf does: group gpud)");
	else if (!process_in_group(st->st_gid) && user_listed_in_group(st->st_gid))
		snprintf(out, len,
			 "you (%s) are in group %s, but this login is not yet: log in again (or "
			 "run `newgrp %s`)",
			 me, group, group);
	else
		snprintf(out, len,
			 "ask to be added to group %s (an administrator runs `usermod -aG %s %s`; "
			 "then log in again)",
			 group, group, me);
}

gpud_status client_access_denied(gpud_client *c, const char *what, const char *path)
{
	struct stat st;
	char desc[200], fix[400];

	if (stat(path, &st) == 0) {
		describe(&st, desc, sizeof(desc));
		remedy(&st, 0, fix, sizeof(fix));
		return client_seterr(c, GPUD_EPERM, "permission denied on %s%s %s: %s", what, path,
				     desc, fix);
	}
	/* A directory on the way keeps this user out: the first one it may not
	 * enter, from the top. */
	char dir[1024];
	snprintf(dir, sizeof(dir), "%s", path);
	for (char *p = dir[0] == '/' ? strchr(dir + 1, '/') : strchr(dir, '/'); p;
	     p = strchr(p + 1, '/')) {
		*p = '\0';
		if (faccessat(AT_FDCWD, dir, X_OK, AT_EACCESS) != 0 && errno == EACCES &&
		    stat(dir, &st) == 0) {
			describe(&st, desc, sizeof(desc));
			remedy(&st, 1, fix, sizeof(fix));
			return client_seterr(c, GPUD_EPERM,
					     "permission denied on %s%s: its directory %s %s keeps "
					     "you out: %s",
					     what, path, dir, desc, fix);
		}
		*p = '/';
	}
	return client_seterr(c, GPUD_EPERM,
			     "permission denied on %s%s (%s): ask gpud's administrator for "
			     "access",
			     what, path, strerror(errno));
}
