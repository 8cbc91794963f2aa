/* Streaming detokenizer: window decoding with hold-back of text that later tokens could change. */
#include "tokenizer/detok_stream.h"

#include <string.h>

#include "tokenizer/tokenizer_impl.h"

omnic_status omnic__detok_stream_init(omnic__detok_stream *s, const omnic__tokenizer *tok, bool skip_special,
                                      omnic_err *err)
{
    memset(s, 0, sizeof *s);
    s->tok = tok;
    s->skip_special = skip_special;
    return omnic__tok_scratch_get(tok, &s->sc, err);
}

void omnic__detok_stream_deinit(omnic__detok_stream *s)
{
    if (!s) return;
    if (s->sc) omnic__tok_scratch_put(s->tok, s->sc);
    omnic__ivec_free(&s->win);
    omnic__tbuf_free(&s->prefix);
    omnic__tbuf_free(&s->dec);
    omnic__tbuf_free(&s->out);
    memset(s, 0, sizeof *s);
}

/* The byte-level bytes of a token (what the ByteLevel decoder makes of it): up to the last 4. */
static size_t token_tail_bytes(const omnic__tokenizer *t, int32_t id, unsigned char tail[4])
{
    const char *s = t->pool.p + t->ids[id].off;
    size_t n = t->ids[id].len, cnt = 0;
    unsigned char buf[4];
    bool raw = false;
    for (size_t k = 0; k < n;) {
        size_t cl;
        int b = omnic__bytelevel_byte(omnic__utf8_decode(s + k, &cl));
        if (b < 0) {
            raw = true;
            break;
        }
        if (cnt == 4) memmove(buf, buf + 1, --cnt);
        buf[cnt++] = (unsigned char)b;
        k += cl;
    }
    if (raw) {
        cnt = n < 4 ? n : 4;
        memcpy(buf, s + n - cnt, cnt);
    }
    memcpy(tail, buf, cnt);
    return cnt;
}

/* How many ids of the window decode to text no later id can change. */
static size_t stable_count(const omnic__detok_stream *s)
{
    const omnic__tokenizer *t = s->tok;
    const int32_t *w = s->win.v;
    size_t m = s->win.n;
    if (t->dtraits.byte_fallback)
        while (m > s->ctx && (t->ids[w[m - 1]].flags & OMNIC__TOKID_BYTE))
            m--;
    while (t->dtraits.byte_level && m > s->ctx) {
        /* the last (up to) 4 bytes of win[ctx, m) and which token each came from */
        unsigned char last[4];
        size_t owner[4], cnt = 0;
        for (size_t k = m; k-- > s->ctx && cnt < 4;) {
            unsigned char tb[4];
            size_t tn = token_tail_bytes(t, w[k], tb);
            while (tn-- > 0 && cnt < 4) {
                memmove(last + 1, last, cnt);
                memmove(owner + 1, owner, cnt * sizeof *owner);
                last[0] = tb[tn];
                owner[0] = k;
                cnt++;
            }
        }
        size_t inc = omnic__utf8_incomplete_tail((const char *)last, cnt);
        if (!inc) break;
        m = owner[cnt - inc]; /* drop the token where the incomplete sequence starts, and re-check */
    }
    return m;
}

static omnic_status set_out(omnic__detok_stream *s, const char *p, size_t n, const char **text, size_t *len,
                            omnic_err *err)
{
    s->out.len = 0;
    OMNIC_TRY(omnic__tbuf_put(&s->out, p, n, err));
    OMNIC_TRY(omnic__tbuf_reserve(&s->out, 0, err));
    s->out.p[s->out.len] = 0;
    *text = s->out.p;
    *len = s->out.len;
    return OMNIC_OK;
}

omnic_status omnic__detok_stream_push(omnic__detok_stream *s, int32_t id, const char **text, size_t *len,
                                      omnic_err *err)
{
    const omnic__tokenizer *t = s->tok;
    *text = "";
    *len = 0;
    if (id < 0 || (size_t)id >= t->n_ids || !(t->ids[id].flags & OMNIC__TOKID_PRESENT))
        return OMNIC_FAIL(err, OMNIC_E_INVALID,
                          "tokenizer: token id %lld is not in the vocabulary (vocab size %zu)", (long long)id,
                          t->n_ids);
    if (s->skip_special && (t->ids[id].flags & OMNIC__TOKID_SPECIAL))
        return OMNIC_OK; /* decodes to nothing */
    OMNIC_TRY(omnic__ivec_push(&s->win, id, err));
    size_t m = stable_count(s);
    if (m <= s->ctx) return OMNIC_OK;
    s->dec.len = 0;
    OMNIC_TRY(omnic__tokenizer_decode_into(t, s->win.v, m, s->skip_special, &s->dec, s->sc, err));
    if (s->dec.len <= s->prefix.len || (s->prefix.len && memcmp(s->dec.p, s->prefix.p, s->prefix.len) != 0))
        return OMNIC_OK; /* nothing new yet (or a decoder that rewrote earlier text: wait) */
    OMNIC_TRY(set_out(s, s->dec.p + s->prefix.len, s->dec.len - s->prefix.len, text, len, err));
    /* the ids just returned become the context of the next window */
    size_t drop = s->ctx;
    memmove(s->win.v, s->win.v + drop, (s->win.n - drop) * sizeof *s->win.v);
    s->win.n -= drop;
    s->ctx = m - drop;
    s->prefix.len = 0;
    return omnic__tokenizer_decode_into(t, s->win.v, s->ctx, s->skip_special, &s->prefix, s->sc, err);
}

omnic_status omnic__detok_stream_flush(omnic__detok_stream *s, const char **text, size_t *len, omnic_err *err)
{
    *text = "";
    *len = 0;
    omnic_status st = OMNIC_OK;
    if (s->win.n > s->ctx) {
        s->dec.len = 0;
        st = omnic__tokenizer_decode_into(s->tok, s->win.v, s->win.n, s->skip_special, &s->dec, s->sc, err);
        if (st == OMNIC_OK) {
            size_t skip = s->dec.len >= s->prefix.len &&
                                  (!s->prefix.len || !memcmp(s->dec.p, s->prefix.p, s->prefix.len))
                              ? s->prefix.len
                              : 0;
            st = set_out(s, s->dec.p + skip, s->dec.len - skip, text, len, err);
        }
    }
    s->win.n = 0;
    s->ctx = 0;
    s->prefix.len = 0;
    return st;
}
