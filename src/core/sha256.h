/* SHA-256 (FIPS 180-4), incremental. */
#ifndef OMNIC_CORE_SHA256_H
#define OMNIC_CORE_SHA256_H

#include <stddef.h>
#include <stdint.h>

typedef struct omnic__sha256 {
    uint32_t h[8];
    uint64_t len; /* bytes hashed so far */
    uint8_t buf[64];
    size_t buf_len;
} omnic__sha256;

void omnic__sha256_init(omnic__sha256 *s);
void omnic__sha256_update(omnic__sha256 *s, const void *data, size_t n);
void omnic__sha256_final(omnic__sha256 *s, uint8_t out[32]);
/* Lowercase hex of a digest into out[65]. */
void omnic__sha256_hex(const uint8_t digest[32], char out[65]);
/* Convenience: a string field followed by a 0 byte, so fields cannot run together. */
void omnic__sha256_field(omnic__sha256 *s, const char *str);

#endif
