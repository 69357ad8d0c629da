/*
 * tests/e2e/two_tenants.c — the fixture several cases share: the test's
 * gpud listening on a tcp:// port of its own as well as its ipc:// socket,
 * with a tokens file (mode 0600) for tenants alice and bob, and connections
 * as either. The test's thread owns it, as the rest of the fixture.
 */
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tests/e2e/e2e.h"

char tenants_url[64];
char tenants_tokens[700];

void start_tenants(const char *conf_tail, const char *const *extra, const char *const *env,
		   const char *cgroup)
{
	static char conf[4096];
	char *tokens = tenants_tokens;
	static const char *args[32];
	int n = 0;
	snprintf(tenants_url, sizeof(tenants_url), "tcp://127.0.0.1:%d", e2e_free_port());
	snprintf(tokens, sizeof(tenants_tokens), "%s/tokens-%d", base_dir, (int)getpid());
	write_text(tokens, "alice " TOKEN_ALICE "\nbob " TOKEN_BOB "\n");
	chmod(tokens, 0600);
	snprintf(conf, sizeof(conf), "[gpud]\ntokens_file = %s\n%s", tokens,
		 conf_tail ? conf_tail : "");
	args[n++] = "--listen";
	args[n++] = tenants_url;
	for (int i = 0; extra && extra[i] && n < 31; i++)
		args[n++] = extra[i];
	args[n] = NULL;
	start_gpud_in_cgroup(conf, args, env, cgroup);
}

gpud_client *connect_token(const char *token)
{
	gpud_options o = {.url = tenants_url, .token = token, .timeout_ms = 120000};
	gpud_client *c = NULL;
	gpud_status st = gpud_connect_opts(&o, &c);
	ck_assert_msg(st == GPUD_OK, "connect %s: %s: %s", tenants_url, gpud_strerror(st),
		      gpud_errmsg(c));
	return c;
}
