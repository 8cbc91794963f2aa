/* The family interface for media input (DESIGN.md 3, "The family interface"; docs/multimodal.md).
 *
 * A family that takes a modality fills in one omnic__media_ops table for it and names it in
 * its descriptor (models/family.h). Everything above src/models/ (engine, server, CLI) goes
 * through the functions at the end of this header and never learns which family it talks to:
 *
 *   processor config parse   omnic__media_proc_init      (preprocessor_config.json -> params)
 *   preprocess               omnic__media_preprocess     (decoded media -> owned item)
 *   placeholder expansion    omnic__media_item_rows      (one logical placeholder -> N rows)
 *   encoder module           omnic__media_encode         (item -> projected rows [N, H_text])
 *   merge                    omnic__media_merge          (logical ids + rows -> PreparedPrefill)
 *   capability report        omnic__model_accepts / omnic__media_describe
 *
 * Audio fills in the same table (decoded samples in omnic__decoded_media, an audio.encode
 * module behind encode, a valid length in the item); adapter modes and side inputs travel in
 * the PreparedPrefill that merge builds (mm/prepared.h). */
#ifndef OMNIC_MODELS_MEDIA_H
#define OMNIC_MODELS_MEDIA_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <jansson.h>

#include "core/tensor.h"
#include "mm/image.h"
#include "mm/prepared.h"
#include "runtime/module.h"

typedef enum omnic__modality {
    OMNIC_MODALITY_TEXT,
    OMNIC_MODALITY_IMAGE,
    OMNIC_MODALITY_AUDIO,
    OMNIC_MODALITY_COUNT
} omnic__modality;

/* "text", "image", "audio"; "?" out of range. */
const char *omnic__modality_name(omnic__modality m);

/* One preprocessed media item: what a family's processor makes of one decoded image (or clip)
 * and its encoder takes. Owned by whoever holds it (omnic__media_item_deinit). */
typedef struct omnic__media_item {
    omnic__modality modality;
    omnic__tensor *input; /* owned: the encoder's input (pixel_values in the family's layout) */
    bool has_grid;        /* packed-patch towers: grid is the processor's image_grid_thw */
    int64_t grid[3];      /* (t, h, w) in patches; (1, 1, 1) without a grid */
    int64_t valid;        /* audio: valid frames of input; 0 for images */
    int64_t rows;         /* prompt rows the item's one placeholder expands to */
    int64_t crops;        /* Gemma 3 pan-and-scan crops after the image itself: input is then
                           * [1 + crops, ...], one sub-image per placeholder, split into plain
                           * items (omnic__media_item_part) before encoding; 0 otherwise */
    int64_t in_w, in_h;   /* the decoded size; out_w, out_h: the size the processor resized to
                           * (audio: the sample rate in *_w and the samples in *_h, as decoded
                           * and as resampled for the features) */
    int64_t out_w, out_h;
    bool limited;    /* resized smaller because of a user limit (--max-image-pixels or a
                      * request's mm_processor_kwargs), not the checkpoint's own; audio: the
                      * clip was truncated to the processor's longest (Gemma 3n's 30 s): reported */
    bool has_key;    /* key is set (omnic__media_item_key): the engine may cache its encoding */
    uint8_t key[32]; /* SHA-256 of modality, input dtype and dims, grid, valid, rows, out_w, out_h and
                      * the input bytes */
} omnic__media_item;

/* Sets it->key (and has_key) from its content: two items with the same key give the encoder
 * the same input. No-op without an input tensor. */
void omnic__media_item_key(omnic__media_item *it);

/* Placeholders the item fills in a logical prompt: 1 + its pan-and-scan crops. */
static inline int64_t omnic__media_item_parts(const omnic__media_item *it)
{
    return 1 + (it->crops > 0 ? it->crops : 0);
}
/* Sub-image j (0: the image, 1..: its crops) of an item as a plain owned item *out (input
 * [dims[1..]], key set when it has one). A plain item's part 0 is a copy. E_INVALID, E_NOMEM. */
omnic_status omnic__media_item_part(const omnic__media_item *it, int64_t j, omnic__media_item *out,
                                    omnic_err *err);

/* Frees it->input and zeroes *it; NULL ok. */
void omnic__media_item_deinit(omnic__media_item *it);
/* Deep copy of src into *out (owned). E_NOMEM. */
omnic_status omnic__media_item_copy(omnic__media_item *out, const omnic__media_item *src, omnic_err *err);

/* Decoded media handed to a processor (borrowed): the field of the processor's modality. */
typedef struct omnic__decoded_media {
    const omnic__image *image;
    const struct omnic__audio *audio; /* mm/audio.h: mono samples at the file's rate */
} omnic__decoded_media;

/* Per-request processor options (vLLM's mm_processor_kwargs): 0 = the processor's own value. */
typedef struct omnic__media_kwargs {
    int64_t min_pixels, max_pixels;      /* Qwen2-VL-style processors */
    int pan_and_scan;                    /* Gemma 3's do_pan_and_scan: 0 unset, 1 false, 2 true */
    int64_t pas_min_crop, pas_max_crops; /* pan_and_scan_min_crop_size / _max_num_crops */
    double pas_min_ratio;                /* pan_and_scan_min_ratio_to_activate */
} omnic__media_kwargs;

/* True when kw sets anything. */
static inline bool omnic__media_kwargs_any(const omnic__media_kwargs *kw)
{
    return kw && (kw->min_pixels || kw->max_pixels || kw->pan_and_scan || kw->pas_min_crop ||
                  kw->pas_max_crops || kw->pas_min_ratio != 0);
}

struct omnic__model;
struct omnic__tokenizer;

/* The work of one encode: multiply-accumulates, and the encoder's dominant matmul shape
 * ([rows, width] x [inter, width]^T) for a GEMM probe of the same size. */
typedef struct omnic__encode_cost {
    double macs;
    int64_t rows, width, inter;
} omnic__encode_cost;

/* A family's table for one modality. Every function is required unless marked optional. */
typedef struct omnic__media_ops {
    omnic__modality modality;
    /* Binds the encoder's weights, plans its modules on m's backend and sets m->media[modality]
     * (state, placeholder id). Called once by omnic__model_open after the text decoder. */
    omnic_status (*open)(struct omnic__model *m, omnic_err *err);
    /* Frees what open made (NULL-safe on a partly opened model). */
    void (*close)(struct omnic__model *m);
    /* True when the encoder's weights and modules loaded (the capability predicate's part). */
    bool (*ready)(const struct omnic__model *m);
    /* (optional) Why prompts of this modality cannot be served although the encoder runs (a
     * part the family needs is not built), or NULL when they can. The capability predicate
     * (omnic__model_accepts) is false while it says something; benchmarks still encode. */
    const char *(*unserved)(const struct omnic__model *m);
    /* True when this table's processor reads the processor config pc (its image_processor_type). */
    bool (*proc_claims)(const json_t *pc);
    /* Processor parameters from pc alone (`what` names it in messages); variant NULL (the
     * config's numerics), "pil" or "torchvision" (Hugging Face's slow / fast path); kw (NULL:
     * none) overrides the config's pixel bounds as a processor call's arguments do (E_UNSUPPORTED
     * when the processor takes none). Returns owned *params. */
    omnic_status (*proc_parse)(const json_t *pc, const char *what, const char *variant,
                               const omnic__media_kwargs *kw, void **params, omnic_err *err);
    /* Checks params against m's encoder and fits them to it; user_max_pixels > 0 lowers the
     * processor's pixel bound (a user limit). */
    omnic_status (*proc_fit)(const struct omnic__model *m, void *params, int64_t user_max_pixels,
                             omnic_err *err);
    omnic_status (*proc_clone)(const void *params, void **out, omnic_err *err);
    void (*proc_free)(void *params);
    /* (optional) Applies per-request kwargs within the server's bounds; E_INVALID naming the value
     * and the bound. NULL: the processor takes none (requests that set them are refused). */
    omnic_status (*proc_kwargs)(void *params, const omnic__media_kwargs *kw, omnic_err *err);
    /* The largest output the processor makes (pixels), for reports; 0: fixed size. own: the
     * processor config's own bound, before the encoder's capacity and any user limit. */
    int64_t (*proc_max_pixels)(const void *params, bool own);
    /* Decoded media -> owned *out (input tensor, grid, rows, sizes). */
    omnic_status (*preprocess)(const void *params, const omnic__decoded_media *in, omnic__media_item *out,
                               omnic_err *err);
    /* Checks an item against m's encoder and gives the rows its placeholder expands to. */
    omnic_status (*item_rows)(const struct omnic__model *m, const omnic__media_item *it, int64_t *rows,
                              omnic_err *err);
    /* Starts the encoder on one item (omnic__module_start: inputs checked and bound, nothing run
     * yet) and names its module and the outputs the caller reads once it has run: *projected
     * [rows, H_text] and *features (the encoder's selected hidden state; -1: none). */
    omnic_status (*encode_start)(struct omnic__model *m, const omnic__media_item *it, omnic__module **mod,
                                 int *projected, int *features, omnic_err *err);
    /* (optional) The item's rows from the module encode_start started, once it has run: R rows
     * (omnic__media_item_rows), then R rows per side output, into dst. NULL: the first R rows of
     * *projected and of each side output (an encoder whose rows are a layout of its outputs, such
     * as Phi-4-multimodal's HD crops with separators, writes them itself). */
    omnic_status (*encode_rows)(const struct omnic__model *m, const omnic__media_item *it,
                                const omnic__module *mod, int projected, float *dst, omnic_err *err);
    /* What one encode of it costs (benchmarks). */
    void (*encode_cost)(const struct omnic__model *m, const omnic__media_item *it, omnic__encode_cost *out);
    /* logical [n] (one placeholder per item) + projected (every item's rows in order,
     * [sum rows, H_text]) -> *out (embeddings, positions, bias, adapter mode, side inputs). */
    omnic_status (*merge)(const struct omnic__model *m, const int32_t *logical, int64_t n,
                          const omnic__media_item *const *items, int64_t n_items, const float *projected,
                          omnic__prepared_prefill *out, omnic_err *err);
    /* (optional) The processor's rewrite of a rendered prompt before it is tokenized (Gemma 3:
     * each <start_of_image> becomes "\n\n<start_of_image><image_soft_token><end_of_image>\n\n",
     * the soft token being the one logical placeholder; an image i with crops[i] > 0 (n_crops
     * entries, the prompt's images in order; NULL: none) is first written as Gemma3Processor
     * writes a panned-and-scanned one). *out: owned rewritten text, or NULL when text[0..len)
     * needs none. NULL: prompts are tokenized as rendered. */
    omnic_status (*expand_prompt)(const struct omnic__model *m, const struct omnic__tokenizer *tok,
                                  const char *text, size_t len, const int64_t *crops, size_t n_crops,
                                  char **out, size_t *out_len, omnic_err *err);
    /* (optional) printf format of an item's placeholder in prompt text, N counting the prompt's
     * items of this modality from 1 ("<|image_%zu|>": Phi4MultimodalProcessor's prompts): chat
     * messages then carry their media as text (string content), not as template content parts.
     * NULL: media are content parts the chat template writes. */
    const char *prompt_tag;
    /* Capability report for `omnic inspect`: the encoder, its processor facts, its modules. */
    void (*describe)(const struct omnic__model *m, FILE *out);
    /* One-line description of the encoder (benchmark tables). */
    void (*summary)(const struct omnic__model *m, char *buf, size_t n);
    /* Planned module bytes of the encoder. */
    size_t (*planned_bytes)(const struct omnic__model *m);
    /* Appends ";name:contract" of each encoder module to modules and the input buckets to buckets
     * (bundle identity). */
    void (*identity)(const struct omnic__model *m, char *modules, size_t n_modules, char *buckets,
                     size_t n_buckets);
} omnic__media_ops;

/* A model's processor for one modality (immutable once made: share it, or clone it to apply a
 * request's kwargs). */
typedef struct omnic__media_proc {
    const omnic__media_ops *ops;
    void *params;            /* owned by ops */
    int64_t user_max_pixels; /* the user limit it was made with; 0 none */
    bool has_ident;          /* ident is set: made for a model (proc_init, then proc_with) */
    uint8_t ident[32];       /* SHA-256 of the bundle identity, modality, user limit and kwargs:
                              * two processors with one ident make the same items (media memo) */
} omnic__media_proc;

/* m's processor for modality mod (E_UNSUPPORTED naming the modality when m does not take it).
 * user_max_pixels: 0, or a user limit on the processor's output size (pixels). */
omnic_status omnic__media_proc_init(omnic__media_proc *p, const struct omnic__model *m, omnic__modality mod,
                                    int64_t user_max_pixels, omnic_err *err);
/* A processor made from a processor config alone (no model; `omnic preprocess`): the table of
 * modality mod that claims pc (borrowed), variant and kw as for proc_parse. */
omnic_status omnic__media_proc_from_config(omnic__media_proc *p, const json_t *pc, const char *what,
                                           omnic__modality mod, const char *variant,
                                           const omnic__media_kwargs *kw, omnic_err *err);
/* A copy of src with kw applied (E_INVALID naming the bad value; E_UNSUPPORTED when the
 * processor takes no kwargs and kw sets any). */
omnic_status omnic__media_proc_with(omnic__media_proc *out, const omnic__media_proc *src,
                                    const omnic__media_kwargs *kw, omnic_err *err);
/* NULL ok. */
void omnic__media_proc_deinit(omnic__media_proc *p);
/* The E_UNSUPPORTED error of a processor that takes no pixel bounds (for tables' proc_parse). */
omnic_status omnic__media_no_kwargs(omnic__modality mod, omnic_err *err);
/* Largest processor output in pixels (0: fixed); own: the processor config's own bound. */
int64_t omnic__media_proc_max_pixels(const omnic__media_proc *p, bool own);

/* Decoded media -> owned *out through p. */
omnic_status omnic__media_preprocess(const omnic__media_proc *p, const omnic__decoded_media *in,
                                     omnic__media_item *out, omnic_err *err);

/* The model-level dispatch of the table above (E_UNSUPPORTED naming the modality when m does not
 * take the item's modality). */
omnic_status omnic__media_item_rows(const struct omnic__model *m, const omnic__media_item *it, int64_t *rows,
                                    omnic_err *err);
/* The whole encode: encode_start, then the module run to the end. *projected (and *features when
 * not NULL) valid until the next encode. */
omnic_status omnic__media_encode(struct omnic__model *m, const omnic__media_item *it,
                                 const omnic__tensor **projected, const omnic__tensor **features,
                                 omnic_err *err);
/* After the module of encode_start has run: the item's R rows, then R rows per side output
 * (m->media[modality].n_side), into dst (caller-sized [R * (1 + n_side), H_text]). E_INTERNAL when
 * the encoder's outputs have the wrong shape. */
omnic_status omnic__media_encode_rows(const struct omnic__model *m, const omnic__media_item *it,
                                      const omnic__module *mod, int projected, float *dst, omnic_err *err);
/* encode_start alone, for a caller that runs the module in slices between other work
 * (omnic__module_run); the table's outputs as encode_start gives them. */
omnic_status omnic__media_encode_start(struct omnic__model *m, const omnic__media_item *it,
                                       omnic__module **mod, int *projected, int *features, omnic_err *err);
void omnic__media_encode_cost(const struct omnic__model *m, const omnic__media_item *it,
                              omnic__encode_cost *out);
/* Items all of one modality (the prompt's placeholders of that modality, in order). */
omnic_status omnic__media_merge(const struct omnic__model *m, const int32_t *logical, int64_t n,
                                const omnic__media_item *const *items, int64_t n_items,
                                const float *projected, omnic__prepared_prefill *out, omnic_err *err);
/* Every modality's expand_prompt over text[0..len) in turn: owned *out (NUL-terminated), or
 * NULL when no table rewrote it (m NULL: none). crops: the images' pan-and-scan crop counts in
 * prompt order (NULL: none known yet). E_NOMEM; E_INVALID when crops name more images than the
 * prompt has. */
omnic_status omnic__media_expand_prompt(const struct omnic__model *m, const struct omnic__tokenizer *tok,
                                        const char *text, size_t len, const int64_t *crops, size_t n_crops,
                                        char **out, size_t *out_len, omnic_err *err);
/* The table's prompt_tag for modality mod (NULL: none, or m does not take mod). */
const char *omnic__media_prompt_tag(const struct omnic__model *m, omnic__modality mod);
/* Placeholder id of modality mod in m's logical prompts; -1 when m does not take it. */
int32_t omnic__media_placeholder(const struct omnic__model *m, omnic__modality mod);

#endif
