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
