/*
 * SHA-256 and HMAC-SHA256 (FIPS 180-4, RFC 2104), for the authenticated link handshake. Written
 * here rather than taken from libcrypto so the runtime still builds with nothing but a C compiler
 * and make; checked against the RFC 4231 test vectors by the C test. A leaf: no other includes of
 * the runtime.
 */
#ifndef PDRT_HMAC_H
#define PDRT_HMAC_H

#include <stddef.h>
#include <stdint.h>

#define SHA256_BYTES 32
#define SHA256_BLOCK 64

typedef struct {
    uint32_t h[8];
    uint64_t len;                    /* bytes absorbed */
    uint8_t buf[SHA256_BLOCK];
    size_t nbuf;
} sha256_ctx;

void sha256_init(sha256_ctx *s);
void sha256_update(sha256_ctx *s, const void *data, size_t len);
void sha256_final(sha256_ctx *s, uint8_t out[SHA256_BYTES]);

typedef struct {
    sha256_ctx inner, outer;
} hmac_ctx;

void hmac_init(hmac_ctx *h, const uint8_t *key, size_t key_len);
void hmac_update(hmac_ctx *h, const void *data, size_t len);
void hmac_final(hmac_ctx *h, uint8_t out[SHA256_BYTES]);
void hmac_sha256(const uint8_t *key, size_t key_len, const void *data, size_t len, uint8_t out[SHA256_BYTES]);

/* 1 when the n bytes of a and b are equal; the time taken does not depend on where they differ. */
int ct_equal(const uint8_t *a, const uint8_t *b, size_t n);
/* Overwrites n bytes in a way the compiler cannot drop as a dead store. */
void wipe(void *p, size_t n);

#endif /* PDRT_HMAC_H */
