/*
** support/arena.c: the compile arena (see arena.h).
*/
#include "arena.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct ArenaBlock {
	ArenaBlock *next;
	size_t used, cap;
	_Alignas(16) unsigned char data[];
};

enum { BLOCK_MIN = 64 * 1024 };

void arena_init(Arena *a)
{
	a->head = NULL, a->total = 0;
}

void arena_free(Arena *a)
{
	ArenaBlock *b = a->head;
	while (b) {
		ArenaBlock *next = b->next;
		free(b);
		b = next;
	}
	a->head = NULL;
	a->total = 0;
}

/* Large requests get a block of their own so that small ones keep filling the
** current block instead of wasting its tail. */
void *arena_alloc(Arena *a, size_t n)
{
	n = (n + 15) & ~(size_t)15;
	if (n == 0)
		n = 16;
	ArenaBlock *b = a->head;
	if (!b || b->cap - b->used < n) {
		size_t cap = n > BLOCK_MIN ? n : BLOCK_MIN;
		ArenaBlock *nb = malloc(sizeof *nb + cap);
		if (!nb) {
			fprintf(stderr, "attnc: out of memory\n");
			abort();
		}
		nb->used = 0, nb->cap = cap;
		if (n > BLOCK_MIN && b) {
			/* keep the partly used block at the head */
			nb->next = b->next;
			b->next = nb;
		} else {
			nb->next = b;
			a->head = nb;
		}
		b = nb;
	}
	void *p = b->data + b->used;
	b->used += n;
	a->total += n;
	memset(p, 0, n);
	return p;
}

void *arena_realloc(Arena *a, void *old, size_t oldn, size_t newn)
{
	if (newn <= oldn)
		return old;
	void *p = arena_alloc(a, newn);
	if (old && oldn)
		memcpy(p, old, oldn);
	return p;
}

char *arena_strndup(Arena *a, const char *s, size_t n)
{
	char *p = arena_alloc(a, n + 1);
	memcpy(p, s, n);
	p[n] = 0;
	return p;
}

char *arena_strdup(Arena *a, const char *s)
{
	return arena_strndup(a, s, strlen(s));
}

char *arena_vprintf(Arena *a, const char *fmt, va_list ap)
{
	va_list ap2;
	va_copy(ap2, ap);
	int n = vsnprintf(NULL, 0, fmt, ap2);
	va_end(ap2);
	char *p = arena_alloc(a, (size_t)n + 1);
	vsnprintf(p, (size_t)n + 1, fmt, ap);
	return p;
}

char *arena_printf(Arena *a, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char *p = arena_vprintf(a, fmt, ap);
	va_end(ap);
	return p;
}

void ptrvec_push(Arena *a, PtrVec *pv, void *p)
{
	if (pv->n == pv->cap) {
		int cap = pv->cap ? pv->cap * 2 : 8;
		pv->v = arena_realloc(a, pv->v, sizeof(void *) * (size_t)pv->cap,
				      sizeof(void *) * (size_t)cap);
		pv->cap = cap;
	}
	pv->v[pv->n++] = p;
}
