/*
** test/unit/sha256.c: support/sha256 against FIPS 180-4's examples and a
** million 'a's, fed whole and in pieces of every size up to 130 bytes (so
** that every block boundary and padding case is crossed).
*/
#include <stdio.h>
#include <string.h>

#include "support/sha256.h"

static int check(const char *what, const char *data, size_t n, size_t piece, const char *want)
{
	Sha256 s;
	char got[65];
	sha256_init(&s);
	for (size_t i = 0; i < n; i += piece)
		sha256_update(&s, data + i, n - i < piece ? n - i : piece);
	sha256_hex(&s, got);
	if (strcmp(got, want)) {
		fprintf(stderr, "sha256 %s (pieces of %zu): got %s, want %s\n", what, piece, got,
			want);
		return 1;
	}
	return 0;
}

int main(void)
{
	static char million[1000000];
	static const char two_blocks[] = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
	int bad = 0;
	memset(million, 'a', sizeof million);
	for (size_t piece = 1; piece <= 130; piece++) {
		bad |= check("\"\"", "", 0, piece,
			     "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
		bad |= check("abc", "abc", 3, piece,
			     "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
		bad |= check("448 bits", two_blocks, strlen(two_blocks), piece,
			     "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
	}
	bad |= check("a million a", million, sizeof million, 4096,
		     "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
	bad |= check("a million a", million, sizeof million, 63,
		     "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
	puts(bad ? "sha256: FAILED" : "sha256: ok");
	return bad;
}
