/* Stop-string matching with hold-back of possible prefixes. */
#include <string.h>

#include "core/limits.h"
#include "engine/stop.h"

omnic_status omnic__stop_init(omnic__stop_matcher *m, const char *const *stops, size_t n, omnic_err *err)
{
    memset(m, 0, sizeof *m);
    if (n > OMNIC_MAX_STOPS)
        return OMNIC_FAIL(err, OMNIC_E_TOO_LARGE, "%zu stop strings is over the limit of %d", n,
                          OMNIC_MAX_STOPS);
    if (n == 0) return OMNIC_OK;
    m->stops = omnic_alloc_array(n, sizeof *m->stops);
    m->stop_len = omnic_alloc_array(n, sizeof *m->stop_len);
    if (!m->stops || !m->stop_len) goto nomem;
    m->n_stops = n;
    for (size_t i = 0; i < n; i++) {
        size_t len = strlen(stops[i]);
        if (len == 0 || len > OMNIC_MAX_STOP_LEN) {
            omnic__stop_deinit(m);
            return OMNIC_FAIL(err, len ? OMNIC_E_TOO_LARGE : OMNIC_E_INVALID,
                              "stop string %zu is %zu bytes (allowed 1..%d)", i, len, OMNIC_MAX_STOP_LEN);
        }
        m->stops[i] = omnic_strdup(stops[i]);
        if (!m->stops[i]) goto nomem;
        m->stop_len[i] = len;
    }
    return OMNIC_OK;
nomem:
    omnic__stop_deinit(m);
    return OMNIC_FAIL(err, OMNIC_E_NOMEM, "out of memory for %zu stop strings", n);
}

void omnic__stop_deinit(omnic__stop_matcher *m)
{
    for (size_t i = 0; m->stops && i < m->n_stops; i++)
        omnic_free(m->stops[i]);
    omnic_free(m->stops);
    omnic_free(m->stop_len);
    omnic_free(m->buf);
    omnic_free(m->out);
    memset(m, 0, sizeof *m);
}

/* Length of the longest suffix of s[0..n) that is a proper prefix of some stop string. */
static size_t held_suffix(const omnic__stop_matcher *m, const char *s, size_t n)
{
    size_t best = 0;
    for (size_t i = 0; i < m->n_stops; i++) {
        size_t max = m->stop_len[i] - 1 < n ? m->stop_len[i] - 1 : n;
        for (size_t k = max; k > best; k--)
            if (!memcmp(s + n - k, m->stops[i], k)) {
                best = k;
                break;
            }
    }
    return best;
}

/* Grows *p to hold n bytes. */
static bool reserve(char **p, size_t *cap, size_t n)
{
    if (n <= *cap) return true;
    size_t c;
    if (!omnic_size_mul(&c, n, 2) || !omnic_size_add(&c, c, 64)) return false;
    char *q = omnic_realloc(*p, c);
    if (!q) return false;
    *p = q;
    *cap = c;
    return true;
}

bool omnic__stop_push(omnic__stop_matcher *m, const char *text, size_t len, const char **emit,
                      size_t *emit_len, omnic_err *err)
{
    *emit = text;
    *emit_len = 0;
    if (m->stopped) return true;
    if (m->n_stops == 0) {
        *emit_len = len;
        return false;
    }
    if (len == 0) return false; /* nothing new: nothing can match (and m->buf may be unallocated) */
    size_t total;
    if (!omnic_size_add(&total, m->held, len) || !reserve(&m->buf, &m->cap, total) ||
        !reserve(&m->out, &m->out_cap, total)) {
        OMNIC_FAIL(err, OMNIC_E_NOMEM, "out of memory holding %zu bytes for stop matching", m->held + len);
        *emit_len = len; /* cannot hold back: pass the text through rather than lose it */
        return false;
    }
    memcpy(m->buf + m->held, text, len);
    size_t first = total; /* earliest match of any stop string */
    for (size_t i = 0; i < m->n_stops; i++) {
        const char *p = memmem(m->buf, total, m->stops[i], m->stop_len[i]);
        if (p && (size_t)(p - m->buf) < first) first = (size_t)(p - m->buf);
    }
    size_t keep = first < total ? 0 : held_suffix(m, m->buf, total);
    size_t n_emit = first < total ? first : total - keep;
    memcpy(m->out, m->buf, n_emit);
    memmove(m->buf, m->buf + total - keep, keep);
    m->held = keep;
    *emit = m->out;
    *emit_len = n_emit;
    if (first < total) m->stopped = true;
    return m->stopped;
}

void omnic__stop_flush(omnic__stop_matcher *m, const char **emit, size_t *emit_len)
{
    *emit = m->buf ? m->buf : "";
    *emit_len = m->stopped ? 0 : m->held;
    m->held = 0;
}
