/*
** support/diag.h: source files, locations and user diagnostics.
** Every message a user sees about their .attn file goes through here, in the
** GNU form "file:line:col: error: message", followed by the source line and a
** caret under the offending text. The line is shown as a terminal can show
** it safely: cut to a window of about 120 columns around the caret ("..."
** on each cut side), control bytes, invalid UTF-8 and terminal-steering code
** points written as \xNN, the caret moved with them.
*/
#ifndef ATTN_DIAG_H
#define ATTN_DIAG_H

#include <stdarg.h>
#include <stdio.h>

#include "arena.h"

/* A span in a source file: 1-based line and byte column, length in bytes. */
typedef struct SrcLoc {
	int file; /* index into Diag.files; -1 for no location */
	int line, col, len;
} SrcLoc;

typedef struct SourceFile {
	const char *name;
	const char *text; /* whole file, NUL-terminated */
	size_t size;
} SourceFile;

typedef enum { DIAG_ERROR, DIAG_WARNING, DIAG_NOTE } DiagLevel;

typedef struct Diag {
	Arena *arena;
	SourceFile files[8];
	int nfiles;
	int errors, warnings;
	int max_errors; /* stop reporting (and ask callers to stop) past this */
	int suppressed; /* errors not printed because of the cap */
	FILE *out;      /* stderr unless a test captures it */
	int color;      /* unused for now; GNU colour codes when set */
} Diag;

void diag_init(Diag *d, Arena *a, FILE *out);
/* Registers a file's contents and returns its index for SrcLoc.file. */
int diag_add_file(Diag *d, const char *name, const char *text, size_t size);
/* Reads a whole file into the arena; prints one line ("attnc: error: cannot
** open ...") and returns -1 on failure. A file that is not text fails the
** same way, with no echo of its bytes: one holding a NUL byte, or one where
** more than a quarter of the bytes are control characters (tab, newline, CR,
** FF and VT aside) or invalid UTF-8. Fewer such bytes are left to the lexer,
** whose diagnostics show them escaped. */
int diag_load_file(Diag *d, const char *path);

void diag_error(Diag *d, SrcLoc loc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
void diag_warning(Diag *d, SrcLoc loc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
void diag_note(Diag *d, SrcLoc loc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
void diag_vreport(Diag *d, DiagLevel lv, SrcLoc loc, const char *fmt, va_list ap);
/* True once the error cap is reached: passes stop early instead of cascading. */
int diag_too_many(const Diag *d);
/* Smallest span covering both a and b (same file assumed). */
SrcLoc loc_span(SrcLoc a, SrcLoc b);

static const SrcLoc NOLOC = {-1, 0, 0, 0};

#endif
