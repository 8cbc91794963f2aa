/* Resource budgets (core/budget.h). */
#include "core/budget.h"
#include "core/limits.h"
#include "core/sync.h"

void omnic__budget_server(omnic__budget *b)
{
    *b = (omnic__budget){.body_bytes = OMNIC_SERVER_BODY_BYTES,
                         .json_bytes = OMNIC_SERVER_JSON_BYTES,
                         .image_pixels = OMNIC_SERVER_IMAGE_PIXELS,
                         .jpeg_decoder_bytes = OMNIC_SERVER_JPEG_DECODER_BYTES,
                         .template_steps = OMNIC_SERVER_TEMPLATE_STEPS,
                         .template_work = OMNIC_SERVER_TEMPLATE_WORK_BYTES,
                         .template_output = OMNIC_SERVER_TEMPLATE_OUTPUT};
}

omnic_status omnic__budget_time(const omnic__budget *b, const char *stage, omnic_err *err)
{
    if (!b || !(b->deadline > 0) || omnic__now() < b->deadline) return OMNIC_OK;
    return OMNIC_FAIL(err, OMNIC_E_TIMEOUT, "the request's time ran out during %s", stage);
}

static _Thread_local struct {
    bool on, over;
    size_t max, used;
} heap;

void omnic__budget_heap_begin(size_t max)
{
    heap.on = true;
    heap.over = false;
    heap.max = max;
    heap.used = 0;
}

bool omnic__budget_heap_charge(size_t n)
{
    if (!heap.on) return true;
    if (heap.max && (n > heap.max || heap.used > heap.max - n)) {
        heap.over = true;
        return false;
    }
    heap.used += n;
    return true;
}

size_t omnic__budget_heap_end(bool *over)
{
    if (over) *over = heap.over;
    size_t used = heap.used;
    heap.on = heap.over = false;
    heap.used = heap.max = 0;
    return used;
}
