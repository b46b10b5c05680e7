/*
** support/arena.h: one bump allocator per compilation.
** Everything the front end, the IR and the emitters allocate lives in one
** Arena and is released at once by arena_free, so error paths never leak.
*/
#ifndef ATTN_ARENA_H
#define ATTN_ARENA_H

#include <stdarg.h>
#include <stddef.h>

typedef struct ArenaBlock ArenaBlock;
typedef struct Arena {
	ArenaBlock *head;
	size_t total; /* bytes handed out, for statistics */
} Arena;

void arena_init(Arena *a);
void arena_free(Arena *a);
/* Zeroed, 16-byte aligned memory; aborts on exhaustion (out of memory is
** not a user error we can report more precisely). */
void *arena_alloc(Arena *a, size_t n);
void *arena_realloc(Arena *a, void *old, size_t oldn, size_t newn);
char *arena_strdup(Arena *a, const char *s);
char *arena_strndup(Arena *a, const char *s, size_t n);
char *arena_printf(Arena *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
char *arena_vprintf(Arena *a, const char *fmt, va_list ap);

#define ARENA_NEW(a, T)      ((T *)arena_alloc((a), sizeof(T)))
#define ARENA_ARRAY(a, T, n) ((T *)arena_alloc((a), sizeof(T) * (size_t)(n)))

/* A growable array of pointers whose storage lives in an arena. */
typedef struct PtrVec {
	void **v;
	int n, cap;
} PtrVec;
void ptrvec_push(Arena *a, PtrVec *pv, void *p);

#endif
