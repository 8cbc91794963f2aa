/* libFuzzer target for multipart/form-data bodies (server/multipart.h), as
 * /v1/audio/transcriptions receives them. The input's first line is the Content-Type header
 * value, the rest the body. Any input must parse into parts that lie inside the body with
 * NUL-terminated names, or give an error with a message; never a crash or a read past the body. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "server/buf.h"
#include "server/multipart.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const uint8_t *nl = memchr(data, '\n', size);
    if (!nl || nl - data > 300) return 0;
    char ct[301];
    memcpy(ct, data, (size_t)(nl - data));
    ct[nl - data] = '\0';
    const uint8_t *body = nl + 1;
    const size_t len = size - (size_t)(nl + 1 - data);
    omnic__form f;
    omnic_err err;
    omnic_err_clear(&err);
    if (omnic__form_parse(ct, body, len, &f, &err) != OMNIC_OK) {
        if (!err.msg[0] || memchr(err.msg, '\0', sizeof err.msg) == NULL) __builtin_trap();
        return 0;
    }
    if (f.n < 0 || f.n > OMNIC_MAX_FORM_PARTS) __builtin_trap();
    for (int i = 0; i < f.n; i++) {
        const omnic__form_part *p = &f.parts[i];
        if (!memchr(p->name, '\0', sizeof p->name) || !p->name[0] ||
            !memchr(p->filename, '\0', sizeof p->filename))
            __builtin_trap();
        if (p->data < body || p->data + p->len > body + len) __builtin_trap();
        if (omnic__form_get(&f, p->name) != p) __builtin_trap(); /* names are unique */
    }
    /* what the server does with a file part: base64 for the chat request */
    const omnic__form_part *file = omnic__form_get(&f, "file");
    if (file) {
        omnic__buf b = {0};
        omnic__buf_base64(&b, file->data, file->len);
        if (!b.oom && b.len != (file->len + 2) / 3 * 4) __builtin_trap();
        omnic__buf_free(&b);
    }
    return 0;
}
