/*
** support/sha256.h: SHA-256 (FIPS 180-4), for keys of content-addressed
** caches: a key must change whenever any byte of what it names does.
*/
#ifndef ATTN_SHA256_H
#define ATTN_SHA256_H

#include <stddef.h>
#include <stdint.h>

typedef struct Sha256 {
	uint32_t h[8];
	uint64_t len;          /* bytes hashed so far */
	unsigned char buf[64]; /* the block being filled */
} Sha256;

void sha256_init(Sha256 *s);
void sha256_update(Sha256 *s, const void *data, size_t n);
/* The digest as 64 lowercase hex digits and a NUL. */
void sha256_hex(Sha256 *s, char out[65]);

#endif
