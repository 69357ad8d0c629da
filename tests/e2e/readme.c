/*
 * tests/e2e/readme.c — test case "readme": the gpuctl examples of README.md
 * and the .md files of docs/ run, so they cannot rot. Every code line there
 * that starts with "$ " is a command (a line ending in '\' continues on the next); the lines after it,
 * up to the next "$ " or the end of the block, are its output, where "..."
 * stands for any text (a line of just "..." for any lines). Each block that
 * runs gpuctl is one bash script in a directory with the README's input
 * files and a cpu-backend gpud at GPUD_URL; each command must print what the
 * README shows and exit 0, or non-zero where the README shows
 * "gpuctl: error:". Code lines that start with "gpuctl " but not "$ " must be
 * in a synopsis (a block with upper-case placeholders such as FILE), so no
 * example escapes. The exit-status table (docs/user-guide.md) must say what
 * `gpuctl help` says. The files are read as one text, README.md first; messages
 * name the file and its line.
 */
#include <ctype.h>
#include <fnmatch.h>
#include <glob.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/e2e/e2e.h"

#define MAX_CMDS 32
#define MAX_LINES 64

typedef struct example {
	int line;                /* in the text read (see where) */
	char cmd[2048];          /* the command, continuation lines joined by "\n" */
	char *expect[MAX_LINES]; /* the output it shows (pointers into the README copy) */
	int nexpect;
} example;

typedef struct block {
	int line;
	example ex[MAX_CMDS];
	int n;
} block;

/*
 * Where a command's outcome on the cpu backend differs from what the README
 * shows (it says so in its text): the command, the exit status and words of the
 * message. An entry the README no longer has fails the test.
 */
static struct {
	const char *cmd;
	int code;
	const char *words;
	int seen;
} cpu_differs[] = {
	{"gpuctl run my_saxpy_trig x=@x32.npy y=@y32.npy a=0.5 -o z.npy", 70,
	 "custom kernels need the cuda backend", 0},
};
#define NDIFFERS (sizeof(cpu_differs) / sizeof(cpu_differs[0]))

static char readme_text[1 << 20];

/* The files read into readme_text: each one's name and the line it starts at there. */
static struct {
	char name[64];
	int first;
} doc_files[32];
static int ndoc_files;

/* "FILE line N" for a line of readme_text; from a ring of buffers, so that a message
 * may name a few. */
static const char *where(int line)
{
	static char ring[4][96];
	static int next;
	char *out = ring[next++ % 4];
	int f = 0;
	while (f + 1 < ndoc_files && doc_files[f + 1].first <= line)
		f++;
	snprintf(out, sizeof(ring[0]), "%s line %d", ndoc_files ? doc_files[f].name : "README.md",
		 ndoc_files ? line - doc_files[f].first + 1 : line);
	return out;
}

/* Appends the .md files of docs/, beside README.md (path), to readme_text. */
static void read_docs(const char *path)
{
	char dir[PATH_MAX], pattern[PATH_MAX + 16];
	glob_t g;
	size_t len = strlen(readme_text);
	int line = 1;

	for (const char *c = readme_text; *c; c++)
		line += *c == '\n';
	if (len > 0 && readme_text[len - 1] != '\n') {
		readme_text[len++] = '\n';
		readme_text[len] = '\0';
	} else if (len > 0) {
		line--;
	}
	snprintf(doc_files[0].name, sizeof(doc_files[0].name), "README.md");
	doc_files[0].first = 1;
	ndoc_files = 1;
	snprintf(dir, sizeof(dir), "%s", path);
	snprintf(pattern, sizeof(pattern), "%s/docs/*.md", dirname(dir));
	if (glob(pattern, 0, NULL, &g) != 0)
		return;
	for (size_t i = 0; i < g.gl_pathc && ndoc_files < 32; i++) {
		long n = harness_read_text(g.gl_pathv[i], readme_text + len,
					   sizeof(readme_text) - len - 1);
		ck_assert_msg(n >= 0 && len + (size_t)n + 2 < sizeof(readme_text),
			      "%s: cannot read it whole", g.gl_pathv[i]);
		snprintf(doc_files[ndoc_files].name, sizeof(doc_files[0].name), "docs/%s",
			 strrchr(g.gl_pathv[i], '/') + 1);
		doc_files[ndoc_files++].first = line + 1;
		for (long k = 0; k < n; k++)
			line += readme_text[len + (size_t)k] == '\n';
		len += (size_t)n;
		if (n > 0 && readme_text[len - 1] != '\n') {
			readme_text[len++] = '\n';
			readme_text[len] = '\0';
			line++;
		}
	}
	globfree(&g);
}

/* README.md, then the .md files of docs/ beside it: from the working directory (make runs
 * the suite at the top of the tree), else above this program. */
static void read_readme(char *path, size_t len)
{
	char dir[PATH_MAX];
	snprintf(path, len, "README.md");
	snprintf(dir, sizeof(dir), "%s", self_path);
	for (int up = 0; up < 5; up++) {
		if (harness_read_text(path, readme_text, sizeof(readme_text)) > 0 &&
		    strstr(readme_text, "# gpud")) {
			read_docs(path);
			return;
		}
		char up_dir[PATH_MAX];
		snprintf(up_dir, sizeof(up_dir), "%s", dirname(dir)); /* dirname writes into dir */
		snprintf(dir, sizeof(dir), "%s", up_dir);
		snprintf(path, len, "%.*s/README.md", (int)(len - 11), dir);
	}
	ck_abort_msg("README.md not found in the working directory or above %s", self_path);
}

/* Leading spaces of s. */
static int indent_of(const char *s)
{
	int n = 0;
	while (s[n] == ' ')
		n++;
	return n;
}

/* Has a placeholder: a word of two or more upper-case letters (FILE, URL, KERNEL). */
static int has_placeholder(const char *s)
{
	for (const char *p = s; *p; p++) {
		int n = 0;
		while (isupper((unsigned char)p[n]) || p[n] == '_')
			n++;
		if (n >= 2 && (p == s || !isalnum((unsigned char)p[-1])) &&
		    !isalnum((unsigned char)p[n]))
			return 1;
		if (n)
			p += n - 1;
	}
	return 0;
}

/*
 * The gpuctl lines of a code block without examples must be a synopsis: at least one of
 * them has placeholders (FILE, URL). Checked when the block ends; resets the list.
 */
static void check_synopsis(int *lines, char **texts, int *n)
{
	int placeholders = 0;
	for (int i = 0; i < *n; i++)
		placeholders |= has_placeholder(texts[i]);
	for (int i = 0; i < *n && !placeholders; i++)
		ck_abort_msg("%s: '%s' looks like an example: write it as '$ %s' so "
			     "that the e2e suite runs it, or make its block a synopsis (with "
			     "placeholders such as FILE or URL)",
			     where(lines[i]), texts[i], texts[i]);
	*n = 0;
}

/* Splits the README into lines (in place) and collects the example blocks. */
static int collect(char **lines, int nlines, block *blocks, int maxb)
{
	int nb = 0, in_fence = 0, nsyn = 0, syn_line[64];
	char *syn[64];
	block *cur = NULL;
	int cur_indent = 0;

	for (int i = 0; i < nlines; i++) {
		char *l = lines[i];
		int ind = indent_of(l);
		if (!strncmp(l + ind, "```", 3)) {
			in_fence = !in_fence;
			cur = NULL;
			check_synopsis(syn_line, syn, &nsyn);
			continue;
		}
		int blank = l[ind] == '\0';
		int code = in_fence || (ind >= 4 && !blank);
		if (blank || !code || (cur && ind < cur_indent))
			cur = NULL;
		if (blank || !code) {
			check_synopsis(syn_line, syn, &nsyn);
			continue;
		}
		char *text = l + ind;
		if (!strncmp(text, "$ ", 2)) {
			if (cur == NULL) {
				ck_assert_msg(
					nb < maxb,
					"README.md and docs/*.md: more than %d example blocks",
					maxb);
				cur = &blocks[nb++];
				memset(cur, 0, sizeof(*cur));
				cur->line = i + 1;
				cur_indent = ind;
			}
			ck_assert_msg(cur->n < MAX_CMDS, "%s: block too long", where(i + 1));
			example *e = &cur->ex[cur->n++];
			e->line = i + 1;
			snprintf(e->cmd, sizeof(e->cmd), "%s", text + 2);
			/* continuation lines */
			while (e->cmd[0] && e->cmd[strlen(e->cmd) - 1] == '\\' && i + 1 < nlines) {
				i++;
				size_t n = strlen(e->cmd);
				snprintf(e->cmd + n, sizeof(e->cmd) - n, "\n%s", lines[i]);
			}
			continue;
		}
		if (cur != NULL && cur->n > 0) {
			example *e = &cur->ex[cur->n - 1];
			ck_assert_msg(e->nexpect < MAX_LINES, "%s: output too long", where(i + 1));
			e->expect[e->nexpect++] = l + cur_indent;
			continue;
		}
		/* A code line outside any example: a gpuctl line there must be a synopsis. */
		if (!strncmp(text, "gpuctl ", 7) && nsyn < 64) {
			syn_line[nsyn] = i + 1;
			syn[nsyn++] = text;
		}
	}
	check_synopsis(syn_line, syn, &nsyn);
	return nb;
}

/* Lines of got (split in place) against the pattern lines, "..." being a wildcard. */
static int match_lines(char **want, int nw, char **got, int ng)
{
	if (nw == 0)
		return ng == 0;
	if (!strcmp(want[0], "...")) {
		for (int k = 0; k <= ng; k++)
			if (match_lines(want + 1, nw - 1, got + k, ng - k))
				return 1;
		return 0;
	}
	if (ng == 0)
		return 0;
	/* "..." inside a line: any text; everything else literally */
	char pat[4096];
	size_t o = 0;
	for (const char *p = want[0]; *p && o + 3 < sizeof(pat); p++) {
		if (!strncmp(p, "...", 3)) {
			pat[o++] = '*';
			p += 2;
			continue;
		}
		if (strchr("*?[\\", *p))
			pat[o++] = '\\';
		pat[o++] = *p;
	}
	pat[o] = '\0';
	return fnmatch(pat, got[0], 0) == 0 && match_lines(want + 1, nw - 1, got + 1, ng - 1);
}

static int split_lines(char *s, char **v, int max)
{
	int n = 0;
	if (*s == '\0')
		return 0;
	while (n < max) {
		v[n++] = s;
		char *nl = strchr(s, '\n');
		if (nl == NULL)
			break;
		*nl = '\0';
		s = nl + 1;
		if (*s == '\0')
			break;
	}
	return n;
}

static int mentions_gpuctl(const block *b)
{
	for (int i = 0; i < b->n; i++)
		if (strstr(b->ex[i].cmd, "gpuctl"))
			return 1;
	return 0;
}

/* Runs a block as one script: each command's output (stdout and stderr) and status. */
static void run_block(const block *b)
{
	static char script[65536], out[65536];
	size_t o = 0;
	int cpu = !strcmp(expected_backend(), "cpu");

	o += (size_t)snprintf(script + o, sizeof(script) - o, "exec 2>&1\n");
	for (int i = 0; i < b->n; i++)
		o += (size_t)
			snprintf(script + o, sizeof(script) - o,
				 "{ %s\n}; __s=$?; printf '\\036%%d\\n' \"$__s\"; (exit $__s)\n",
				 b->ex[i].cmd);
	ck_assert_msg(o < sizeof(script), "%s: block too long", where(b->line));
	ctl_result *r = sh_run(script);
	snprintf(out, sizeof(out), "%s", r->out);

	char *p = out;
	for (int i = 0; i < b->n; i++) {
		const example *e = &b->ex[i];
		char *mark = strchr(p, '\036');
		ck_assert_msg(mark != NULL, "%s: '%s' did not finish; the block said:\n%s",
			      where(e->line), e->cmd, r->out);
		*mark = '\0';
		int code = atoi(mark + 1);
		char *seg = p;
		p = strchr(mark + 1, '\n');
		p = p ? p + 1 : mark + 1 + strlen(mark + 1);

		for (size_t d = 0; d < NDIFFERS; d++) {
			if (strcmp(e->cmd, cpu_differs[d].cmd) != 0)
				continue;
			cpu_differs[d].seen = 1;
			if (!cpu)
				continue;
			ck_assert_msg(code == cpu_differs[d].code &&
					      strstr(seg, cpu_differs[d].words) != NULL,
				      "%s: '%s' on the cpu backend: exit %d, expected "
				      "%d and '%s':\n%s",
				      where(e->line), e->cmd, code, cpu_differs[d].code,
				      cpu_differs[d].words, seg);
			goto next;
		}
		int fails = 0;
		for (int k = 0; k < e->nexpect; k++)
			fails |= !strncmp(e->expect[k], "gpuctl: error:", 14);
		ck_assert_msg(fails ? code != 0 : code == 0,
			      "%s: '%s' exited %d, expected %s; it said:\n%s", where(e->line),
			      e->cmd, code, fails ? "an error" : "0", seg);
		{
			char *got[256];
			int ng = split_lines(seg, got, 256);
			ck_assert_msg(match_lines((char **)e->expect, e->nexpect, got, ng),
				      "%s: '%s' printed something else than the docs "
				      "show (the lines after it):\n%s",
				      where(e->line), e->cmd, r->out);
		}
	next:;
	}
}

/* The README's input files: x, y (94 float64), f (200), y_short (5), x32, y32, scale.cu. */
static void make_readme_inputs(void)
{
	double x[94], y[94], f[200];
	char p[700];
	gen_ls(1994, 94, 200, x, y, f);
	path_in_dir(p, sizeof(p), "x.npy");
	save_vec(p, GPUD_F64, x, 94);
	path_in_dir(p, sizeof(p), "y.npy");
	save_vec(p, GPUD_F64, y, 94);
	path_in_dir(p, sizeof(p), "f.npy");
	save_vec(p, GPUD_F64, f, 200);
	path_in_dir(p, sizeof(p), "y_short.npy");
	save_vec(p, GPUD_F64, y, 5);
	path_in_dir(p, sizeof(p), "x32.npy");
	save_vec(p, GPUD_F32, x, 94);
	path_in_dir(p, sizeof(p), "y32.npy");
	save_vec(p, GPUD_F32, y, 94);
	path_in_dir(p, sizeof(p), "scale.cu");
	write_text(p, "extern \"C\" __global__ void scale(const float *x, float *y, float s, "
		      "long long n)\n"
		      "{\n"
		      "\tfor (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; "
		      "i < n;\n"
		      "\t     i += (long long)gridDim.x * blockDim.x)\n"
		      "\t\ty[i] = s * x[i];\n"
		      "}\n");
}

START_TEST(test_readme_examples)
{
	static char *lines[4096];
	static block blocks[64];
	char path[PATH_MAX];

	read_readme(path, sizeof(path));
	int nlines = split_lines(readme_text, lines, 4096);
	int nb = collect(lines, nlines, blocks, 64);
	make_readme_inputs();
	int ran = 0, cmds = 0;
	for (int i = 0; i < nb; i++) {
		if (!mentions_gpuctl(&blocks[i]))
			continue;
		run_block(&blocks[i]);
		ran++;
		cmds += blocks[i].n;
	}
	for (size_t d = 0; d < NDIFFERS; d++)
		ck_assert_msg(cpu_differs[d].seen,
			      "README.md and docs/*.md have no example '%s' any more: remove it "
			      "from cpu_differs in tests/e2e/readme.c",
			      cpu_differs[d].cmd);
	ck_assert_msg(ran >= 4 && cmds >= 15,
		      "only %d blocks (%d commands) of %s and docs/*.md ran", ran, cmds, path);
	assert_daemon_alive("the README's examples");
}
END_TEST

/* The README's exit-status table says what gpuctl help says, status by status. */
START_TEST(test_readme_exit_statuses)
{
	static char help[65536];
	char path[PATH_MAX];
	read_readme(path, sizeof(path));
	ctl_result *r = sh_run("gpuctl help");
	assert_sh_ok(r);
	snprintf(help, sizeof(help), "%s", r->out);
	char *sec = strstr(help, "\nexit status:\n");
	ck_assert_ptr_nonnull(sec);
	int n = 0;
	for (char *l = sec + 14; *l == ' '; n++) {
		char *nl = strchr(l, '\n');
		ck_assert_ptr_nonnull(nl);
		*nl = '\0';
		int code;
		char meaning[256], row[32];
		ck_assert_msg(sscanf(l, " %d %255[^\n]", &code, meaning) == 2, "help line '%s'", l);
		snprintf(row, sizeof(row), "\n| %d | ", code);
		char *at = strstr(readme_text, row);
		ck_assert_msg(at != NULL,
			      "README.md and docs/*.md: the exit-status table has no row for %d",
			      code);
		char *end = strchr(at + 1, '\n');
		ck_assert_msg(end && memmem(at, (size_t)(end - at), meaning, strlen(meaning)),
			      "the exit-status table's row for %d does not say '%s' as gpuctl help "
			      "does",
			      code, meaning);
		l = nl + 1;
	}
	ck_assert_int_eq(n, 11);
}
END_TEST

TCase *e2e_readme(void)
{
	TCase *tc = tcase_create("readme");
	tcase_add_checked_fixture(tc, setup_default, gpud_teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_readme_examples);
	tcase_add_test(tc, test_readme_exit_statuses);
	return tc;
}
