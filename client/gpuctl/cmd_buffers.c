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
	int keep = 0;

	for (int i = 0; i < argc; i++) {
		const char *a = argv[i];
		if (!strcmp(a, "--keep"))
			keep = 1;
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
	gpud_status st;

	if (argc == 0)
		die_usage("free", "missing HANDLE");
	if (argc > 64)
		die_usage("free", "at most 64 handles at once, got %d", argc);
	for (int i = 0; i < argc; i++) {
		if (argv[i][0] == '-')
			die_unknown_option("free", argv[i]);
		hs[i] = parse_handle_arg("free", argv[i]);
	}
	gpud_client *c = ctl_connect();
	if ((st = gpud_free(c, hs, (size_t)argc)) != GPUD_OK)
		die_call(c, st, NULL);
	gpud_close(c);
	return 0;
}

int cmd_ls(int argc, char **argv)
{
	gpud_buffer_info *v;
	gpud_status st;
	size_t n;

	int json = 0;
	for (int i = 0; i < argc; i++) {
		if (!strcmp(argv[i], "--json"))
			json = 1;
		else if (argv[i][0] == '-')
			die_unknown_option("ls", argv[i]);
		else
			die_usage("ls", "unexpected argument '%s'", argv[i]);
	}
	gpud_client *c = ctl_connect();
	if ((st = gpud_list(c, &v, &n)) != GPUD_OK)
		die_call(c, st, NULL);
	if (json) {
		/* Schema gpuctl.ls, version 1: handles as 16 hex digits, as gpuctl takes them. */
		json_t *doc = json_doc("gpuctl.ls", 1), *bs = json_array();
		json_object_set_new(doc, "tenant", json_string(gpud_server(c)->tenant));
		for (size_t i = 0; i < n; i++) {
			char h[17];
			json_t *shape = json_array();
			snprintf(h, sizeof(h), "%016llx", (unsigned long long)v[i].handle);
			for (int d = 0; d < v[i].ndim; d++)
				json_array_append_new(shape, json_u64(v[i].shape[d]));
			json_array_append_new(bs, json_pack("{s:s, s:s, s:o, s:o}", "handle", h,
							    "dtype", gpud_dtype_name(v[i].dtype),
							    "shape", shape, "bytes",
							    json_u64(v[i].nbytes)));
		}
		json_object_set_new(doc, "buffers", bs);
		json_emit(doc);
		n = 0;
	} else {
		printf("%zu kept buffers of tenant %s\n", n, gpud_server(c)->tenant);
	}
	for (size_t i = 0; i < n; i++) {
		char shape[128], by[32];
		gpud_shape_format(shape, sizeof(shape), v[i].shape, v[i].ndim);
		human_bytes(v[i].nbytes, by, sizeof(by));
		printf("%016llx  %-8s %-20s %s\n", (unsigned long long)v[i].handle,
		       gpud_dtype_name(v[i].dtype), shape, by);
	}
	free(v);
	gpud_close(c);
	return 0;
}
