/*
** test/fuzz/fuzz_front.c: libFuzzer target for the front end.
** Any byte string must produce diagnostics or a cascade, never a crash,
** hang or leak; a successful parse is also printed, so the printer and the
** IR's invariants are exercised too.
*/
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lang/front.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static FILE *sink;
	if (!sink)
		sink = fopen("/dev/null", "w");
	if (memchr(data, 0, size))
		return 0; /* attnc rejects NUL bytes before the front end */
	Arena a;
	arena_init(&a);
	Diag d;
	diag_init(&d, &a, sink);
	char *text = arena_strndup(&a, (const char *)data, size);
	int f = diag_add_file(&d, "fuzz.attn", text, size);
	Program *p = front_compile(&a, &d, f);
	if (p)
		program_print(sink, p);
	arena_free(&a);
	return 0;
}
