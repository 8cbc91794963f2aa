/* omnic public C API: status codes, errors, dtypes, checked sizes, allocation, and models:
 * load one, ask what it takes, submit requests (chat messages or token ids, images as encoded
 * bytes, sampling), stream their tokens through a callback, cancel, free.
 * Every symbol here starts with omnic_ / OMNIC_; internal ones use omnic__ and are not exported
 * from libomnic.so. Link: `pkg-config --cflags --libs omnic`. Thread safety: every function
 * may be called from any thread; one omnic_model serves any number of threads at once. */
#ifndef OMNIC_H
#define OMNIC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define OMNIC_VERSION "0.1.0"
/* The version of the model and request API below. A caller sets .api_version of the structs it
 * passes to the value it was compiled with; a library refuses structs from a newer API. */
#define OMNIC_API_VERSION 1

#if defined(__GNUC__)
#define OMNIC_API __attribute__((visibility("default")))
#else
#define OMNIC_API
#endif

/* OMNIC_API_VERSION of the library (it may be newer than the header a program was built with). */
OMNIC_API int omnic_api_version(void);

/* ---- status: one X-macro table gives the enum, names and messages ---- */
#define OMNIC_STATUS_MAP(XX)                                                                                 \
    XX(OK, 0, "ok")                                                                                          \
    XX(E_INVALID, -1, "invalid argument")                                                                    \
    XX(E_CORRUPT, -2, "corrupt input")                                                                       \
    XX(E_TOO_LARGE, -3, "over a limit")                                                                      \
    XX(E_NOMEM, -4, "out of memory")                                                                         \
    XX(E_IO, -5, "i/o error")                                                                                \
    XX(E_NOT_FOUND, -6, "not found")                                                                         \
    XX(E_UNSUPPORTED, -7, "not supported")                                                                   \
    XX(E_CAPACITY, -8, "over capacity")                                                                      \
    XX(E_CANCELLED, -9, "cancelled")                                                                         \
    XX(E_INTERNAL, -10, "internal error")                                                                    \
    XX(E_TIMEOUT, -11, "deadline passed")

typedef enum omnic_status {
#define OMNIC_XX_(name, value, msg) OMNIC_##name = value,
    OMNIC_STATUS_MAP(OMNIC_XX_)
#undef OMNIC_XX_
} omnic_status;

/* "OMNIC_E_CORRUPT" style name; "OMNIC_UNKNOWN" for values outside the table. */
OMNIC_API const char *omnic_status_name(omnic_status s);
/* Short human message ("corrupt input"). */
OMNIC_API const char *omnic_status_str(omnic_status s);

/* An error record filled by fallible functions that face users.
 * Caller-allocated; msg is always NUL-terminated; code == OMNIC_OK means no error. */
#define OMNIC_ERR_MSG_MAX 512
typedef struct omnic_err {
    omnic_status code;
    const char *file; /* source file that raised it (static string) */
    int line;
    char msg[OMNIC_ERR_MSG_MAX];
} omnic_err;

OMNIC_API void omnic_err_clear(omnic_err *err);

/* ---- dtypes: append-only (values are hashed into bundle identities) ---- */
typedef enum omnic_dtype {
    OMNIC_DTYPE_F32 = 0,
    OMNIC_DTYPE_F16 = 1,
    OMNIC_DTYPE_BF16 = 2,
    OMNIC_DTYPE_I32 = 3,
    OMNIC_DTYPE_I64 = 4,
    OMNIC_DTYPE_U8 = 5,
    OMNIC_DTYPE_BOOL = 6,
    /* Block-quantized weights (ggml layouts), 32 elements per block along a row's last dim:
     * q8_0: f16 scale d + 32 x int8 q (34 bytes), x = d * q;
     * q4_0: f16 scale d + 16 bytes of nibbles (18 bytes), x = d * (q - 8), element j in the
     * low nibble of byte j, element j + 16 in the high nibble. Rows hold whole blocks. */
    OMNIC_DTYPE_Q8_0 = 7,
    OMNIC_DTYPE_Q4_0 = 8,
    /* q4_0x16: a q4_0 weight [N, K] (N a multiple of 16) with each 16 rows' blocks regrouped
     * for the cpu backend's AVX-512 kernels (layout: core/quant.h). Made at load time from
     * q4_0, never read from or written to files; 18 bytes per 32 elements, as q4_0. */
    OMNIC_DTYPE_Q4_0X16 = 9,
    /* q8_0x16: the same regrouping of a q8_0 weight (34 bytes per 32 elements, as q8_0). */
    OMNIC_DTYPE_Q8_0X16 = 10,
    OMNIC_DTYPE_COUNT
} omnic_dtype;

/* "f32", "bf16", "q8_0", ...; "?" for out-of-range values. */
OMNIC_API const char *omnic_dtype_name(omnic_dtype t);
/* Bytes per block of omnic_dtype_block_size(t) elements: for element dtypes (block size 1)
 * the bytes per element; for q8_0 34 and q4_0 18 (per 32 elements). 0 for out-of-range
 * values. n elements (a multiple of the block size) take n / block_size * size bytes. */
OMNIC_API size_t omnic_dtype_size(omnic_dtype t);
/* Elements per block: 1 for element dtypes, 32 for q8_0 / q4_0; 0 for out-of-range values. */
OMNIC_API size_t omnic_dtype_block_size(omnic_dtype t);

/* ---- checked size arithmetic: return false on overflow, *out unchanged ---- */
static inline bool omnic_size_mul(size_t *out, size_t a, size_t b)
{
    size_t r;
    if (__builtin_mul_overflow(a, b, &r)) return false;
    *out = r;
    return true;
}
static inline bool omnic_size_add(size_t *out, size_t a, size_t b)
{
    size_t r;
    if (__builtin_add_overflow(a, b, &r)) return false;
    *out = r;
    return true;
}

/* ---- allocation: every heap byte in omnic goes through these ----
 * Sizes above OMNIC_MAX_ALLOC (src/core/limits.h) and size 0 return NULL.
 * omnic_free(NULL) is a no-op. omnic_alloc_array checks n*elem for overflow
 * and returns zeroed memory. */
OMNIC_API void *omnic_malloc(size_t n);
OMNIC_API void *omnic_alloc_array(size_t n, size_t elem);
OMNIC_API void *omnic_realloc(void *p, size_t n);
OMNIC_API void omnic_free(void *p);
/* Returns an owned NUL-terminated copy of s (NULL on failure). */
OMNIC_API char *omnic_strdup(const char *s);


/* ---- models and requests ---- */

/* A loaded model with its tokenizer, processors and scheduler (continuous batching over
 * .parallel slots). Opaque; thread-safe. */
typedef struct omnic_model omnic_model;

typedef struct omnic_model_params {
    int api_version;     /* OMNIC_API_VERSION */
    const char *backend; /* "cpu" (NULL: cpu) or "ref" (the plain-C reference kernels) */
    int threads;         /* 0: every core */
    int64_t ctx;         /* rows per slot; 0: min(max_position_embeddings, 4096) */
    int parallel;        /* sequences decoded together; 0: 1 */
    const char *quant;   /* NULL / "none": weights as stored; "q8_0" or "q4_0": quantized at load */
    bool kv_f32;         /* KV cache in f32 (default f16) */
    bool ignore_generation_config; /* true: greedy defaults, generation_config.json's sampling unread */
} omnic_model_params;

/* Defaults (every field 0 / NULL) with api_version set. */
OMNIC_API omnic_model_params omnic_model_params_default(void);

/* Loads the Hugging Face checkpoint in dir (config.json, *.safetensors, tokenizer.json, ...;
 * borrowed). Returns owned *out. Errors name the file and the key or limit: E_NOT_FOUND,
 * E_UNSUPPORTED (family, config key or dtype omnic does not run), E_INVALID, E_CORRUPT, E_NOMEM. */
OMNIC_API omnic_status omnic_model_load(const char *dir, const omnic_model_params *params, omnic_model **out,
                                        omnic_err *err);
/* Cancels what is in flight (their callbacks get OMNIC_EVENT_DONE with finish "cancelled"),
 * stops the scheduler and frees. NULL ok. Not from inside a callback. */
OMNIC_API void omnic_model_free(omnic_model *m);

/* What a loaded model is and takes (strings borrowed from m). */
typedef struct omnic_model_info {
    const char *family;   /* "llama", "qwen2_vl", "gemma3", ... */
    const char *identity; /* bundle identity: 64 hex digits */
    int64_t vocab, hidden, layers;
    int64_t ctx; /* rows per slot */
    int parallel;
    bool image_input; /* images are taken (the encoder and the processor loaded) */
    bool audio_input;
    bool chat_template; /* messages can be rendered (else only token ids) */
} omnic_model_info;
OMNIC_API omnic_model_info omnic_model_get_info(const omnic_model *m);

/* Encoded media (JPEG, PNG or WebP bytes), borrowed for the submit call. */
typedef struct omnic_media {
    const void *data;
    size_t len;
} omnic_media;

typedef enum omnic_event_kind {
    OMNIC_EVENT_TEXT = 0, /* text became final (possibly empty for a token that produced none) */
    OMNIC_EVENT_DONE = 1, /* the request's last event */
} omnic_event_kind;

typedef struct omnic_event {
    omnic_event_kind kind;
    uint64_t request; /* the id omnic_submit returned */
    int32_t token;    /* TEXT: the token generated (-1: text released at the end) */
    const char *text; /* TEXT: UTF-8, borrowed until the callback returns */
    size_t len;
    const char *finish; /* DONE: "stop", "length", "cancelled", "timeout" or "error" */
    const char *error;  /* DONE with "error": the message */
    int64_t prompt_tokens, completion_tokens; /* DONE: logical prompt tokens, tokens generated */
} omnic_event;

/* Runs on the model's scheduler thread: must not block, and may call only omnic_cancel. */
typedef void (*omnic_event_fn)(void *user, const omnic_event *ev);

typedef struct omnic_request {
    int api_version; /* OMNIC_API_VERSION */
    /* The prompt, one of:
     *   messages_json  a JSON array of {"role", "content"}, content a string or a list of parts
     *                  {"type": "text", "text": ...} and {"type": "image"} (each takes the next of
     *                  images); rendered with the checkpoint's chat template and its generation
     *                  prompt, with the special tokens Hugging Face's processor adds;
     *   tokens         token ids used as given (the model's image placeholder id once per image). */
    const char *messages_json;
    const int32_t *tokens;
    size_t n_tokens;
    const omnic_media *images; /* decoded and preprocessed as the checkpoint's processor does */
    size_t n_images;
    /* Sampling: fields left 0 take generation_config.json's values where it sets them, else
     * greedy. temperature 0 with do_sample unset is greedy. */
    int64_t max_tokens; /* 0: generation_config.json's max_new_tokens, else 256 */
    float temperature;  /* < 0: greedy even if generation_config.json samples */
    int32_t top_k;
    float top_p, min_p;
    uint64_t seed;
    const char *const *stop; /* stop strings, borrowed for the call */
    size_t n_stop;
    bool ignore_eos;
    omnic_event_fn on_event; /* required */
    void *user;
} omnic_request;

/* Validates and queues r; *id identifies it in events and for omnic_cancel. Nothing is queued
 * on failure: E_INVALID (no or two prompts, bad JSON or media, image count != image parts,
 * sampling out of range: names the field), E_UNSUPPORTED (images to a model without image
 * input, messages to a checkpoint without a chat template), E_CAPACITY (prompt + max_tokens
 * over ctx: names the numbers), E_TOO_LARGE (queue full, or a limit of the media), E_NOMEM. */
OMNIC_API omnic_status omnic_submit(omnic_model *m, const omnic_request *r, uint64_t *id, omnic_err *err);
/* Asks request id to stop (its DONE event follows with finish "cancelled"). Unknown or finished
 * ids are ignored. */
OMNIC_API void omnic_cancel(omnic_model *m, uint64_t id);

#ifdef __cplusplus
}
#endif
#endif /* OMNIC_H */
