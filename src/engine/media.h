/* Media preparation for a loaded model, on the caller's thread (the CLI, or the server's media
 * workers; never the scheduler): decode the bytes (images: JPEG / PNG / WebP, limits checked
 * against the header before any pixel memory; audio: WAV / FLAC / MP3 / Ogg, mm/audio.h, with
 * the default audio limits) and run the model's processor for that modality (the family
 * interface, models/media.h) into the item its encoder takes. */
#ifndef OMNIC_ENGINE_MEDIA_H
#define OMNIC_ENGINE_MEDIA_H

#include <stdatomic.h>

#include "mm/image.h"
#include "models/media.h"

/* bytes[0..len) (borrowed) -> owned *out through p (omnic__media_proc_init). limits: NULL for
 * the defaults (core/limits.h). cancel (optional) is checked between decode and processing.
 * Errors name the problem: E_UNSUPPORTED (format), E_TOO_LARGE (dimensions vs the limit),
 * E_CORRUPT (truncated / malformed), E_INVALID, E_CANCELLED, E_NOMEM. *out is zeroed on
 * failure. */
omnic_status omnic__media_prepare(const omnic__media_proc *p, const uint8_t *bytes, size_t len,
                                  const omnic__image_limits *limits, const atomic_bool *cancel,
                                  omnic__media_item *out, omnic_err *err);

/* The seconds each stage of one omnic__media_prepare took (for the per-stage metrics). */
typedef struct omnic__media_times {
    double decode, preprocess;
} omnic__media_times;

/* omnic__media_prepare that also fills *times (may be NULL). */
omnic_status omnic__media_prepare_timed(const omnic__media_proc *p, const uint8_t *bytes, size_t len,
                                        const omnic__image_limits *limits, const atomic_bool *cancel,
                                        omnic__media_item *out, omnic__media_times *times, omnic_err *err);

#endif
