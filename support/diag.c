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

/*
** Showing user text. A source line or message may hold anything but NUL:
** escape sequences, invalid UTF-8, a 200,000-byte line. It is shown as
** units: one byte, or one valid UTF-8 sequence. Printable ASCII, tab and
** UTF-8 that prints are copied; every other byte (control bytes, invalid
** UTF-8, and code points that steer the terminal instead of printing: C1
** controls, bidirectional overrides, line separators) is shown as \xNN.
*/
enum {
	SHOW_WIDTH = 120, /* most columns of a source line shown */
	SHOW_BEFORE = 40, /* columns kept left of the caret when cut */
	MSG_MAX = 1024,   /* bytes of a message shown before "..." */
};

/* Length of the unit at s (s < end), and whether it is shown escaped. */
static int unit_at(const unsigned char *s, const unsigned char *end, int *esc)
{
	static const unsigned least[] = {0, 0, 0x80, 0x800, 0x10000};
	unsigned c = s[0];
	*esc = 0;
	if (c == '\t' || (c >= 0x20 && c < 0x7f))
		return 1;
	*esc = 1;
	int n = c >= 0xc2 && c <= 0xdf   ? 2
		: c >= 0xe0 && c <= 0xef ? 3
		: c >= 0xf0 && c <= 0xf4 ? 4
					 : 0;
	if (!n || end - s < n)
		return 1;
	unsigned cp = c & (0x7fu >> n);
	for (int i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 1;
		cp = cp << 6 | (s[i] & 0x3fu);
	}
	if (cp < least[n] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		return 1;
	*esc = cp < 0xa0 || (cp >= 0x2028 && cp <= 0x202e) || (cp >= 0x2066 && cp <= 0x2069);
	return n;
}

/* Columns a unit takes: a tab counts 8 (its most) when sizing the window. */
static int unit_width(const unsigned char *s, int n, int esc)
{
	return esc ? 4 * n : *s == '\t' ? 8 : 1;
}

/* Prints one unit as unit_at decided. */
static void unit_put(FILE *out, const unsigned char *s, int n, int esc)
{
	for (int i = 0; i < n; i++)
		if (esc)
			fprintf(out, "\\x%02x", s[i]);
		else
			fputc(s[i], out);
}

/* Counts the bytes of text that are not text: what unit_at escapes, except
** the whitespace controls a text file may hold. */
static size_t count_non_text(const char *text, size_t size)
{
	const unsigned char *s = (const unsigned char *)text, *end = s + size;
	size_t bad = 0;
	int esc;
	for (int n; s < end; s += n) {
		n = unit_at(s, end, &esc);
		if (esc && !(n == 1 && (*s == '\n' || *s == '\r' || *s == '\f' || *s == '\v')))
			bad += (size_t)n;
	}
	return bad;
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
	size_t non_text = count_non_text(text, n);
	if (non_text * 4 > n) {
		fprintf(d->out,
			"attnc: error: '%s' is not a text file: %zu%% of its bytes are control "
			"characters or invalid UTF-8\n",
			path, non_text * 100 / n);
		return -1;
	}
	return diag_add_file(d, arena_strdup(d->arena, path), text, n);
}

/*
** Prints the line holding loc with a caret and tildes under the span. Tabs
** are copied into the marker line so the caret stays aligned, and an
** escaped unit gets as many marker columns as its escape. A line wider than
** SHOW_WIDTH columns is cut to a window around the caret, "..." marking
** each cut side; units are shown whole or not at all.
*/
static void show_line(Diag *d, SrcLoc loc)
{
	const SourceFile *f = &d->files[loc.file];
	const unsigned char *p = (const unsigned char *)f->text, *end = p + f->size;
	for (int line = 1; line < loc.line && p < end; p++)
		if (*p == '\n')
			line++;
	const unsigned char *eol = p;
	while (eol < end && *eol != '\n')
		eol++;
	if (eol > p && eol[-1] == '\r')
		eol--; /* CRLF line ends */
	long width = (long)(eol - p), col = loc.col > 1 ? loc.col - 1 : 0;
	long caret = col < width ? col : width, span_end = col + (loc.len > 0 ? loc.len : 0);
	/* Columns of the line and of the caret, as shown. */
	long total = 0, at = -1;
	int n, esc;
	for (const unsigned char *s = p; s < eol; s += n) {
		n = unit_at(s, eol, &esc);
		if (at < 0 && s + n > p + caret)
			at = total;
		total += unit_width(s, n, esc);
	}
	if (at < 0)
		at = total;
	long from = 0, to = total;
	if (total > SHOW_WIDTH) {
		from = at > SHOW_BEFORE ? at - SHOW_BEFORE : 0;
		to = from + SHOW_WIDTH;
		if (to > total)
			to = total, from = total - SHOW_WIDTH;
	}
	/* The line, then the marker line, over the units inside [from, to). */
	for (int pass = 0; pass < 2; pass++) {
		long c = 0, i;
		int cut_left = 0, cut_right = 0, marked = 0;
		for (const unsigned char *s = p; s < eol; s += n, c += unit_width(s - n, n, esc)) {
			n = unit_at(s, eol, &esc);
			i = (long)(s - p);
			if (c < from || c + unit_width(s, n, esc) > to) {
				cut_left |= c < from;
				cut_right |= c >= from;
				continue;
			}
			if (cut_left == 1)
				fputs(pass ? "   " : "...", d->out), cut_left = 2;
			if (!pass)
				unit_put(d->out, s, n, esc);
			else if (i + n <= caret)
				for (int k = 0; k < (esc ? 4 * n : 1); k++)
					fputc(*s == '\t' ? '\t' : ' ', d->out);
			else if (i < span_end || !marked)
				for (int k = 0; k < (esc ? 4 * n : 1); k++)
					fputc(marked++ ? '~' : '^', d->out);
		}
		if (cut_left == 1) /* every unit was cut (a unit wider than the window) */
			fputs(pass ? "   " : "...", d->out);
		if (!pass && cut_right)
			fputs("...", d->out);
		if (pass && !marked)
			fputc('^', d->out), marked = 1;
		if (pass && !cut_right && span_end > width && caret < width)
			fputc('~', d->out); /* the span runs past the end of the line */
		fputc('\n', d->out);
	}
}

/* Prints a formatted message, escaped as source lines are and cut at
** MSG_MAX bytes: messages quote user text (a malformed number of any length). */
static void put_message(FILE *out, const char *fmt, va_list ap)
{
	char buf[MSG_MAX + 1];
	int len = vsnprintf(buf, sizeof buf, fmt, ap);
	if (len < 0)
		return;
	const unsigned char *s = (const unsigned char *)buf, *end = s + strlen(buf);
	int n, esc;
	for (; s < end; s += n) {
		n = unit_at(s, end, &esc);
		unit_put(out, s, n, esc);
	}
	if (len > MSG_MAX)
		fputs("...", out);
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
	put_message(d->out, fmt, ap);
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
