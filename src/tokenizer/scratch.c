/* Per-call working memory of the tokenizer pipeline. */
#include "tokenizer/scratch.h"

#include <string.h>

omnic_status omnic__tok_scratch_init(omnic__tok_scratch *s, omnic_err *err)
{
    memset(s, 0, sizeof *s);
    return omnic__rx_scratch_init(&s->rx, err);
}

void omnic__tok_scratch_deinit(omnic__tok_scratch *s)
{
    if (!s) return;
    omnic__rx_scratch_deinit(&s->rx);
    omnic__tsegs_free(&s->segs);
    omnic__tbuf_free(&s->nb[0]);
    omnic__tbuf_free(&s->nb[1]);
    omnic_free(s->u32);
    omnic__tbuf_free(&s->text);
    omnic__tsplits_free(&s->sp[0]);
    omnic__tsplits_free(&s->sp[1]);
    omnic__tbuf_free(&s->piece);
    omnic__bpe_work_deinit(&s->bpe);
    memset(s, 0, sizeof *s);
}

void omnic__tok_scratch_trim(omnic__tok_scratch *s, size_t keep)
{
    if (s->segs.cap * sizeof *s->segs.v > keep) omnic__tsegs_free(&s->segs);
    for (int i = 0; i < 2; i++) {
        if (s->nb[i].cap > keep) omnic__tbuf_free(&s->nb[i]);
        if (s->sp[i].cap * sizeof *s->sp[i].v > keep) omnic__tsplits_free(&s->sp[i]);
    }
    if (s->u32_cap * sizeof *s->u32 > keep) {
        omnic_free(s->u32);
        s->u32 = NULL;
        s->u32_cap = 0;
    }
    if (s->text.cap > keep) omnic__tbuf_free(&s->text);
    if (s->piece.cap > keep) omnic__tbuf_free(&s->piece);
    omnic__bpe_work_trim(&s->bpe, keep);
}
