/*
** support/diag.c: GNU-style diagnostics with the source line and a caret.
*/
#include "diag.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

void diag_init(Diag *d, Arena *a, FILE *out)
{
	memset(d, 0, sizeof *d);
	d->arena = a;
	d->out = out ? out : stderr;
	d->max_errors = 20;
}

int diag_add_file(Diag *d, const char *name, const char *text, size_t size)
{
	if (d->nfiles == (int)(sizeof d->files / sizeof d->files[0]))
		return -1;
	SourceFile *f = &d->files[d->nfiles];
	f->name = name, f->text = text, f->size = size;
	return d->nfiles++;
}

/* Reads through stdio into a malloc buffer, then copies into the arena, so a
** failed read leaves nothing behind. */
int diag_load_file(Diag *d, const char *path)
{
	FILE *fp = fopen(path, "rb");
	if (!fp) {
		fprintf(d->out, "attnc: error: cannot open '%s': %s\n", path, strerror(errno));
		return -1;
	}
	size_t cap = 4096, n = 0, got;
	char *buf = malloc(cap);
	while (buf && (got = fread(buf + n, 1, cap - n, fp)) > 0) {
		n += got;
		if (n == cap) {
			char *nb = realloc(buf, cap * 2);
			if (!nb) {
				free(buf);
				buf = NULL;
				break;
			}
			buf = nb, cap *= 2;
		}
	}
	int bad = ferror(fp) || !buf;
	fclose(fp);
	if (bad) {
		free(buf);
		fprintf(d->out, "attnc: error: cannot read '%s'\n", path);
		return -1;
	}
	char *text = arena_strndup(d->arena, buf, n);
	free(buf);
	if (memchr(text, 0, n)) {
		fprintf(d->out, "attnc: error: '%s' contains a NUL byte; is it a text file?\n",
			path);
		return -1;
	}
	return diag_add_file(d, arena_strdup(d->arena, path), text, n);
}

SrcLoc loc_span(SrcLoc a, SrcLoc b)
{
	if (a.file < 0)
		return b;
	if (b.file < 0 || b.file != a.file)
		return a;
	SrcLoc r = a;
	if (b.line == a.line) {
		int end = b.col + b.len > a.col + a.len ? b.col + b.len : a.col + a.len;
		r.col = a.col < b.col ? a.col : b.col;
		r.len = end - r.col;
	}
	return r;
}

/* Prints the line holding loc with a caret and tildes under the span; tabs
** are copied into the marker line so the caret stays aligned. */
static void show_line(Diag *d, SrcLoc loc)
{
	const SourceFile *f = &d->files[loc.file];
	const char *p = f->text, *end = f->text + f->size;
	for (int line = 1; line < loc.line && p < end; p++)
		if (*p == '\n')
			line++;
	const char *eol = p;
	while (eol < end && *eol != '\n')
		eol++;
	fprintf(d->out, "%.*s\n", (int)(eol - p), p);
	int width = (int)(eol - p);
	for (int i = 1; i < loc.col && i <= width; i++)
		fputc(p[i - 1] == '\t' ? '\t' : ' ', d->out);
	fputc('^', d->out);
	int len = loc.len;
	if (loc.col + len - 1 > width + 1)
		len = width + 1 - loc.col + 1;
	for (int i = 1; i < len; i++)
		fputc('~', d->out);
	fputc('\n', d->out);
}

void diag_vreport(Diag *d, DiagLevel lv, SrcLoc loc, const char *fmt, va_list ap)
{
	static const char *names[] = {"error", "warning", "note"};
	if (lv == DIAG_ERROR) {
		d->errors++;
		if (d->errors > d->max_errors) {
			d->suppressed++;
			return;
		}
	} else if (lv == DIAG_WARNING) {
		d->warnings++;
	} else if (d->errors > d->max_errors) {
		return;
	}
	if (loc.file >= 0 && loc.file < d->nfiles)
		fprintf(d->out, "%s:%d:%d: %s: ", d->files[loc.file].name, loc.line, loc.col,
			names[lv]);
	else
		fprintf(d->out, "attnc: %s: ", names[lv]);
	vfprintf(d->out, fmt, ap);
	fputc('\n', d->out);
	if (loc.file >= 0 && loc.file < d->nfiles && loc.line > 0)
		show_line(d, loc);
}

#define REPORT(level)                                                                              \
	va_list ap;                                                                                \
	va_start(ap, fmt);                                                                         \
	diag_vreport(d, level, loc, fmt, ap);                                                      \
	va_end(ap)

void diag_error(Diag *d, SrcLoc loc, const char *fmt, ...)
{
	REPORT(DIAG_ERROR);
}
void diag_warning(Diag *d, SrcLoc loc, const char *fmt, ...)
{
	REPORT(DIAG_WARNING);
}
void diag_note(Diag *d, SrcLoc loc, const char *fmt, ...)
{
	REPORT(DIAG_NOTE);
}

int diag_too_many(const Diag *d)
{
	return d->errors > d->max_errors;
}
