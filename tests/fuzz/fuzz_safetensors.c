/* libFuzzer target for the safetensors parser (omnic__st_parse_header): any input must give
 * OMNIC_OK or an error status with a message, never a crash; on success every tensor's
 * bytes are read (ASan checks they lie inside the input) and the lookup invariants hold. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "core/dtype.h"
#include "io/safetensors.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    omnic__safetensors *st = NULL;
    omnic_err err;
    omnic_err_clear(&err);
    omnic_status rc = omnic__st_parse_header(data, size, "fuzz.safetensors", &st, &err);
    if (rc != OMNIC_OK) {
        if (st != NULL || err.code != rc || memchr(err.msg, '\0', sizeof err.msg) == NULL ||
            err.msg[0] == '\0')
            __builtin_trap();
        return 0;
    }
    volatile uint8_t sink = 0;
    size_t n = omnic__st_count(st);
    for (size_t i = 0; i < n; i++) {
        const omnic__st_tensor *t = omnic__st_at(st, i);
        if (omnic__st_find(st, t->name) != t) __builtin_trap();
        if (i > 0 && strcmp(omnic__st_at(st, i - 1)->name, t->name) >= 0) __builtin_trap();
        size_t numel = 1;
        for (int d = 0; d < t->ndim; d++)
            numel *= (size_t)t->dims[d];
        if (numel * omnic_dtype_size(t->dtype) != t->nbytes) __builtin_trap();
        const uint8_t *p = t->data;
        for (size_t b = 0; b < t->nbytes; b++)
            sink ^= p[b];
        omnic__tensor v;
        omnic__st_tensor_view(t, &v);
        if (omnic__tensor_bytes(&v) != t->nbytes) __builtin_trap();
    }
    for (size_t i = 0; i < omnic__st_metadata_count(st); i++) {
        const char *k, *v;
        if (!omnic__st_metadata_at(st, i, &k, &v) || omnic__st_metadata(st, k) != v) __builtin_trap();
    }
    (void)sink;
    omnic__st_close(st);
    return 0;
}
