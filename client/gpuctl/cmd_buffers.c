/*
 * client/gpuctl/cmd_buffers.c — the buffer commands: upload (a .npy file or
 * stdin into a buffer; prints its handle), download (a buffer into a .npy
 * file or stdout), free, and ls (the tenant's kept buffers; --json: schema
 * gpuctl.ls).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/gpuctl/gpuctl.h"
#include "client/gpuctl/json.h"

int cmd_upload(int argc, char **argv)
{
	const char *file = NULL;
	int keep = 0, device = -1;

	for (int i = 0; i < argc; i++) {
		const char *a = argv[i];
		if (!strcmp(a, "--keep"))
			keep = 1;
		else if (!strcmp(a, "--device") && i + 1 < argc)
			device = (int)parse_count("upload", "--device", argv[++i], 0, 1024);
		else if (a[0] == '-' && a[1] != '\0')
			die_unknown_option("upload", a);
		else if (file != NULL)
			die_usage("upload", "one FILE at a time, got '%s' and '%s'", file, a);
		else
			file = a;
	}
	if (file == NULL)
		die_usage("upload", "missing FILE.npy (or - for stdin)");
	const char *path = file[0] == '@' ? file + 1 : file;
	gpud_array a;
	int from_stdin = !strcmp(path, "-");
	if (from_stdin)
		read_stdin_npy("upload", "stdin", &a);
	else
		check_readable("upload", path);

	gpud_client *c = ctl_connect();
	gpud_set_keep(c, keep);
	gpud_set_device(c, device);
	gpud_handle h;
	if (from_stdin) {
		upload_array(c, &a, "stdin", "upload", &h);
		gpud_array_free(&a);
	} else {
		char what[1100];
		snprintf(what, sizeof(what), "upload %s", path);
		upload_file(c, path, what, &h, NULL);
	}
	if (!keep)
		note("without --keep the buffer goes when gpuctl exits");
	printf("%016llx\n", (unsigned long long)h);
	gpud_close(c);
	return 0;
}

/* The buffer's dtype and shape, from the tenant's kept buffers: 1 if found. */
static int kept_meta(gpud_client *c, gpud_handle h, gpud_array *meta)
{
	gpud_buffer_info *v;
	size_t n;
	int found = 0;

	if (gpud_list(c, &v, &n) != GPUD_OK)
		return 0;
	for (size_t i = 0; i < n && !found; i++) {
		if (v[i].handle != h)
			continue;
		memset(meta, 0, sizeof(*meta));
		meta->dtype = v[i].dtype;
		meta->ndim = v[i].ndim;
		memcpy(meta->shape, v[i].shape, sizeof(meta->shape));
		meta->nbytes = v[i].nbytes;
		found = 1;
	}
	free(v);
	return found;
}

int cmd_download(int argc, char **argv)
{
	const char *hs = NULL;
	out_spec o = {0};

	for (int i = 0; i < argc; i++) {
		out_spec next;
		const char *a = argv[i];
		if (take_out_option("download", argc, argv, &i, &next)) {
			if (o.arg)
				die_usage("download",
					  "-o given twice ('%s' and '%s'): the buffer goes to one "
					  "output",
					  o.arg, next.arg);
			if (next.named)
				die_usage(
					"download",
					"-o %s: download writes one buffer; give -o FILE.npy or -o -",
					next.arg);
			o = next;
		} else if (a[0] == '-' && a[1] != '\0') {
			die_unknown_option("download", a);
		} else if (hs != NULL) {
			die_usage("download", "one HANDLE at a time, got '%s' and '%s'", hs, a);
		} else {
			hs = a;
		}
	}
	if (hs == NULL)
		die_usage("download",
			  "missing HANDLE (as 'gpuctl upload' or 'gpuctl ls' shows it)");
	if (o.arg == NULL)
		die_usage("download", "missing -o FILE.npy (or -o - for stdout)");
	gpud_handle h = parse_handle_arg("download", hs);
	if (o.to_stdout)
		check_stdout_not_tty("download");

	gpud_client *c = ctl_connect();
	gpud_array meta;
	gpud_status st;
	/* A bar needs the size first: kept buffers (the only ones another gpuctl can
	 * name) are listed with theirs. */
	if (progress_possible() && kept_meta(c, h, &meta)) {
		download_to(c, h, &meta, o.path, hs, "download");
	} else {
		gpud_array a;
		if ((st = gpud_download(c, h, &a)) != GPUD_OK)
			die_call(c, st, "download");
		save_array(o.path, "download", &a);
		gpud_array_free(&a);
	}
	gpud_close(c);
	return 0;
}

int cmd_free(int argc, char **argv)
{
	gpud_handle hs[64];
	const char *tenant = NULL;
	int nh = 0;
	gpud_status st;

	for (int i = 0; i < argc; i++) {
		if (!strcmp(argv[i], "--tenant")) {
			if (i + 1 >= argc || argv[i + 1][0] == '\0')
				die_usage("free", "--tenant needs a tenant name");
			tenant = argv[++i];
		} else if (argv[i][0] == '-') {
			die_unknown_option("free", argv[i]);
		} else if (nh == 64) {
			die_usage("free", "at most 64 handles at once, got more");
		} else {
			hs[nh++] = parse_handle_arg("free", argv[i]);
		}
	}
	if (nh == 0)
		die_usage("free", "missing HANDLE");
	gpud_client *c = ctl_connect();
	st = tenant ? gpud_free_tenant(c, tenant, hs, (size_t)nh) : gpud_free(c, hs, (size_t)nh);
	if (st != GPUD_OK)
		die_call(c, st, NULL);
	gpud_close(c);
	return 0;
}

static json_t *buffer_json(const gpud_buffer_info *v)
{
	char h[17];
	json_t *shape = json_array();
	snprintf(h, sizeof(h), "%016llx", (unsigned long long)v->handle);
	for (int d = 0; d < v->ndim; d++)
		json_array_append_new(shape, json_u64(v->shape[d]));
	return json_pack("{s:s, s:s, s:o, s:o}", "handle", h, "dtype", gpud_dtype_name(v->dtype),
			 "shape", shape, "bytes", json_u64(v->nbytes));
}

static void buffer_line(const char *tenant, const gpud_buffer_info *v)
{
	char shape[128], by[32];
	gpud_shape_format(shape, sizeof(shape), v->shape, v->ndim);
	human_bytes(v->nbytes, by, sizeof(by));
	if (tenant)
		printf("%-16s ", tenant);
	printf("%016llx  %-8s %-20s %s\n", (unsigned long long)v->handle, gpud_dtype_name(v->dtype),
	       shape, by);
}

/* ls --all: every tenant's kept buffers (administrators). */
static void ls_all(gpud_client *c, int json)
{
	gpud_tenant_buffer *t;
	size_t n;
	gpud_status st;
	if ((st = gpud_list_all(c, &t, &n)) != GPUD_OK)
		die_call(c, st, NULL);
	if (json) {
		/* Schema gpuctl.ls, version 1, with each buffer's tenant. */
		json_t *doc = json_doc("gpuctl.ls", 1), *bs = json_array();
		json_object_set_new(doc, "tenant", json_string(gpud_server(c)->tenant));
		json_object_set_new(doc, "all_tenants", json_true());
		for (size_t i = 0; i < n; i++) {
			json_t *b = buffer_json(&t[i].info);
			json_object_set_new(b, "tenant", json_string(t[i].tenant));
			json_array_append_new(bs, b);
		}
		json_object_set_new(doc, "buffers", bs);
		json_emit(doc);
	} else {
		printf("%zu kept buffers of all tenants\n", n);
		if (n)
			printf("%-16s %-16s  %-8s %-20s %s\n", "TENANT", "HANDLE", "DTYPE", "SHAPE",
			       "SIZE");
		for (size_t i = 0; i < n; i++)
			buffer_line(t[i].tenant, &t[i].info);
	}
	free(t);
}

int cmd_ls(int argc, char **argv)
{
	gpud_buffer_info *v;
	gpud_status st;
	size_t n;

	int json = 0, all = 0;
	for (int i = 0; i < argc; i++) {
		if (!strcmp(argv[i], "--json"))
			json = 1;
		else if (!strcmp(argv[i], "--all"))
			all = 1;
		else if (argv[i][0] == '-')
			die_unknown_option("ls", argv[i]);
		else
			die_usage("ls", "unexpected argument '%s'", argv[i]);
	}
	gpud_client *c = ctl_connect();
	if (all) {
		ls_all(c, json);
		gpud_close(c);
		return 0;
	}
	if ((st = gpud_list(c, &v, &n)) != GPUD_OK)
		die_call(c, st, NULL);
	if (json) {
		/* Schema gpuctl.ls, version 1: handles as 16 hex digits, as gpuctl takes them. */
		json_t *doc = json_doc("gpuctl.ls", 1), *bs = json_array();
		json_object_set_new(doc, "tenant", json_string(gpud_server(c)->tenant));
		for (size_t i = 0; i < n; i++)
			json_array_append_new(bs, buffer_json(&v[i]));
		json_object_set_new(doc, "buffers", bs);
		json_emit(doc);
	} else {
		printf("%zu kept buffers of tenant %s\n", n, gpud_server(c)->tenant);
		for (size_t i = 0; i < n; i++)
			buffer_line(NULL, &v[i]);
	}
	free(v);
	gpud_close(c);
	return 0;
}
