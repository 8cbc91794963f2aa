/* Every bound omnic places on input, in one place. Each is a default that
 * configuration may lower; none may be raised past what the types hold. */
#ifndef OMNIC_CORE_LIMITS_H
#define OMNIC_CORE_LIMITS_H

/* Largest single allocation (bytes). Larger requests fail with NULL. */
#define OMNIC_MAX_ALLOC ((size_t)64 << 30)
/* Tensor rank. */
#define OMNIC_MAX_DIMS 5
/* safetensors JSON header size (bytes); the format's own reference caps it at 100 MB. */
#define OMNIC_MAX_SAFETENSORS_HEADER ((size_t)100 << 20)
/* Tensors in one checkpoint (all shards together). */
#define OMNIC_MAX_TENSORS 200000
/* Shards named by a model.safetensors.index.json. */
#define OMNIC_MAX_SHARDS 4096
/* Tensor name length (bytes). */
#define OMNIC_MAX_TENSOR_NAME 1024
/* Config-style JSON files (config.json, generation_config.json, ...), bytes. */
#define OMNIC_MAX_CONFIG_BYTES ((size_t)16 << 20)
/* tokenizer.json and similar large JSON files, bytes. */
#define OMNIC_MAX_TOKENIZER_BYTES ((size_t)256 << 20)
/* Threads in one pool. */
#define OMNIC_MAX_THREADS 256
/* Nodes in one module graph. */
#define OMNIC_MAX_GRAPH_NODES 65536
/* .npy header length (bytes). */
#define OMNIC_MAX_NPY_HEADER 65536

/* Stop strings per request, and the length of each (bytes). */
#define OMNIC_MAX_STOPS 16
#define OMNIC_MAX_STOP_LEN 256

/* Files listed for a checkpoint directory (regular files at the top level). */
#define OMNIC_MAX_CHECKPOINT_FILES 65536

/* Decoder layers and head size a text config may declare. */
#define OMNIC_MAX_LAYERS 512
/* Experts a mixture-of-experts layer routes each token to (num_experts_per_tok), and experts
 * per layer (num_experts). */
#define OMNIC_MAX_EXPERTS_PER_TOKEN 64
#define OMNIC_MAX_EXPERTS 1024
#define OMNIC_MAX_HEAD_DIM 1024

/* tokenizer.json: entries in the model vocabulary, and the largest token id (model or added). */
#define OMNIC_MAX_VOCAB (1 << 24)
/* tokenizer.json: BPE merges. */
#define OMNIC_MAX_MERGES (1 << 24)
/* tokenizer.json: added_tokens entries. */
#define OMNIC_MAX_ADDED_TOKENS (1 << 20)
/* tokenizer.json: bytes of one token string (vocabulary entry, added token, merge part). */
#define OMNIC_MAX_TOKEN_BYTES 65536
/* tokenizer.json: bytes of one regex pattern (normalizer, pre-tokenizer, decoder). */
#define OMNIC_MAX_TOKENIZER_REGEX 65536
/* tokenizer.json: nesting depth of Sequence normalizers/pre-tokenizers/decoders/processors. */
#define OMNIC_MAX_TOKENIZER_NESTING 32
/* Text bytes one tokenizer encode call accepts. Working memory is about 50 bytes per input byte
 * in the worst case (one word as long as the text), so this also bounds one call's memory. */
#define OMNIC_MAX_ENCODE_BYTES ((size_t)16 << 20)
/* Token ids one tokenizer decode call accepts. */
#define OMNIC_MAX_DECODE_IDS ((size_t)1 << 24)
/* Bytes `omnic tokenize` / `omnic detokenize` read from stdin. */
#define OMNIC_MAX_CLI_INPUT_BYTES ((size_t)1 << 30)

/* Chat templates (src/tokenizer/template*.c); omnic__template_opts may override each.
 * Template source size (bytes); real chat templates are 0.3-40 KB. */
#define OMNIC_MAX_TEMPLATE_BYTES ((size_t)1 << 20)
/* Nesting of blocks and expressions in a template (bounds the parser's recursion). */
#define OMNIC_MAX_TEMPLATE_NESTING 100
/* Bytes one render may output; also the longest string a render may build. */
#define OMNIC_MAX_TEMPLATE_OUTPUT ((size_t)64 << 20)
/* Bytes of strings, lists and dicts a render may hold at once (input strings are borrowed). */
#define OMNIC_MAX_TEMPLATE_MEMORY ((size_t)256 << 20)
/* Bytes a render may allocate in all (its work: every string, list and dict built, summed over
 * the render, whether freed since or not), so a loop rebuilding large strings cannot run for
 * long within the memory bound. */
#define OMNIC_MAX_TEMPLATE_WORK_BYTES ((size_t)1 << 30)
/* Loop iterations, macro calls and items walked by filters, summed over one render. */
#define OMNIC_MAX_TEMPLATE_ITERATIONS 1000000
/* Nested macro and caller() calls in one render (recursion depth). */
#define OMNIC_MAX_TEMPLATE_CALL_DEPTH 64
/* Items one range() call may produce (Jinja's sandbox uses the same MAX_RANGE). */
#define OMNIC_MAX_TEMPLATE_RANGE 100000
/* Nesting of values (lists, dicts) a render converts from JSON, prints, compares or serializes. */
#define OMNIC_MAX_TEMPLATE_VALUE_DEPTH 256

/* Images (src/mm/). Pixels (width x height) of one decoded image, checked against the file's
 * header before any pixel memory is allocated; Pillow's decompression-bomb error threshold
 * (2 x Image.MAX_IMAGE_PIXELS) is 178956970. */
#define OMNIC_MAX_IMAGE_PIXELS 89478485
/* Working memory of the JPEG decoder for one image: a progressive JPEG buffers every DCT
 * coefficient (2 bytes per sample per component) before the first row comes out, so a
 * 705-byte file claiming 9000x9000 CMYK asks for 648 MB. 512 MB takes a 16000x12000 4:2:0
 * progressive photo; baseline files need only a few rows. */
#define OMNIC_MAX_JPEG_DECODER_BYTES ((int64_t)512 << 20)
/* Width or height of one decoded image (JPEG's own limit is 65500). */
#define OMNIC_MAX_IMAGE_SIDE 32768
/* Encoded bytes of one media item (a data: URL's decoded payload, an image file). */
#define OMNIC_MAX_MEDIA_BYTES ((size_t)20 << 20)
/* Audio (src/mm/audio*.c), checked against the file's header before any sample memory: the
 * duration of one clip (seconds), channels (up to 5.1 surround; a 7.1 file is refused)  and the sample rate
 * range (telephone 4 kHz to 384 kHz studio files). */
#define OMNIC_MAX_AUDIO_SECONDS 30.0
#define OMNIC_MAX_AUDIO_CHANNELS 6
#define OMNIC_MIN_AUDIO_RATE 4000
#define OMNIC_MAX_AUDIO_RATE 384000
/* Samples of one decoded or resampled mono clip (bounds the buffers at any configured duration:
 * an hour at 48 kHz). */
#define OMNIC_MAX_AUDIO_SAMPLES ((int64_t)48000 * 3600)
/* Patch rows of one Qwen2-VL-style image: the encoder is planned for min(this, max_pixels /
 * patch^2), so the published max_pixels 12845056 (65536 patches of 14 px, 16384 merged
 * tokens) runs as Hugging Face runs it; a config asking for more has its max_pixels lowered
 * to fit, and the resize is reported. Vision attention is tiled (backend.h), so the encoder's
 * planned memory is linear in this (Qwen2-VL-2B tower: 3.4 GiB planned at 65536 patches,
 * touched only as far as an image needs). */
#define OMNIC_MAX_QWEN_IMAGE_PATCHES 65536
/* Hosts on `omnic serve --allow-remote-media`. */
#define OMNIC_MAX_REMOTE_MEDIA_HOSTS 16
/* --allowed-hosts entries. */
#define OMNIC_MAX_ALLOWED_HOSTS 16
/* Images in one request (the server's --max-images may lower it). */
#define OMNIC_MAX_REQUEST_IMAGES 16
/* Qwen2-VL style image processors (preprocessor_config.json): spatial patch side, temporal
 * patch (frames per patch) and spatial merge size a config may declare; they bound the row
 * length 3 * temporal * patch^2 of pixel_values. Real checkpoints use 14 or 16, 2 and 2. */
#define OMNIC_MAX_VISION_PATCH 256
#define OMNIC_MAX_VISION_TEMPORAL_PATCH 16
#define OMNIC_MAX_VISION_MERGE 16

/* The engine's encoder cache budget (bytes of projected rows; --encoder-cache-mb). */
#define OMNIC_ENCODER_CACHE_BYTES ((int64_t)256 << 20)
/* The prefix cache's default budget (KV blocks of earlier prompts; --prefix-cache-mb) and rows
 * per block (--prefix-block): a prefix is reused in whole blocks. */
#define OMNIC_PREFIX_CACHE_BYTES ((int64_t)512 << 20)
#define OMNIC_PREFIX_BLOCK 32
/* Encoders run in slices while streams decode: each slice takes about this share of a decode
 * step (so the streams' inter-token latency rises by about that much), at least one node; the
 * first slices, before a decode step was measured, take OMNIC_SLICE_FIRST_S times the share. */
#define OMNIC_SLICE_SHARE 0.4
/* A sliced encoder run splits each node into this many parts (slices can end inside a node). */
#define OMNIC_SLICE_PARTS 8
#define OMNIC_SLICE_FIRST_S 0.05
/* Mixed steps (engine.c): while streams decode, a prompt's rows ride in their decode call, as
 * many as keep the step near OMNIC_STEP_RISE times a decode step alone (the streams'
 * inter-token latency rises by about that much, and by one prompt row's cost more in the steps
 * that probe for room: engine.c, mix_adapt); the first carries OMNIC_STEP_FIRST_ROWS.
 * OMNIC_STEP_TOKENS: the server's default cap on a mixed step's rows
 * (decode rows + prompt rows; --step-tokens). */
#define OMNIC_STEP_RISE 1.3
#define OMNIC_STEP_FIRST_ROWS 4
/* After this many mixed steps in a row, one decode step runs alone: the base of the budget is
 * measured again as the streams' contexts grow. */
#define OMNIC_STEP_PROBE 16
#define OMNIC_STEP_TOKENS 64
/* Queued requests the engine looks through for the fairest one to admit (engine.c). */
#define OMNIC_FAIR_SCAN 1024

/* HTTP server (src/server/). Each may be lowered by `omnic serve` options where noted.
 * Request body bytes (JSON); a larger body gets 413 (--max-body). */
#define OMNIC_MAX_BODY_BYTES ((size_t)8 << 20)
/* Messages in one chat completion request. */
#define OMNIC_MAX_MESSAGES 4096
/* Prompts in one completions request (the prompt array form). */
#define OMNIC_MAX_PROMPTS 64
/* Choices one request may ask for (prompts x n); n itself is also capped by --parallel. */
#define OMNIC_MAX_CHOICES 128
/* Generated text (bytes) held for one choice: the not-yet-sent backlog of a stream whose
 * client stopped reading, or the whole text of a non-streamed choice. Past it the request
 * is cancelled. */
#define OMNIC_MAX_CHOICE_TEXT ((size_t)4 << 20)
/* Kernel send buffer of each HTTP connection (bytes; SO_SNDBUF, which Linux doubles): with
 * autotuning the kernel could hold up to tcp_wmem's 4 MiB for a client that stops reading.
 * Plenty for token streams. */
#define OMNIC_HTTP_SNDBUF (256 * 1024)
/* Simultaneous HTTP connections. */
#define OMNIC_MAX_CONNECTIONS 1024
/* Open HTTP connections from one client address (a slow or stalled client cannot take them all). */
#define OMNIC_MAX_CONNECTIONS_PER_IP 64
/* File descriptors the server keeps for itself beyond its connections (model files, logs,
 * media fetches, the engine's threads). */
#define OMNIC_RESERVED_FDS 64
/* Bytes of an API key (--api-key / --api-key-file). */
#define OMNIC_MAX_API_KEY_BYTES 4096
/* --cors-origin values. */
#define OMNIC_MAX_CORS_ORIGINS 32
/* The server's per-request budgets (core/budget.h, docs/server.md): stricter than the
 * library caps above, each raised or lowered by an `omnic serve` flag up to that cap. */
#define OMNIC_SERVER_BODY_BYTES OMNIC_MAX_BODY_BYTES
/* Heap one parse of a request body may allocate: 16 x the largest body (jansson expands
 * `[1,1,...]` about 20x). */
#define OMNIC_SERVER_JSON_BYTES ((size_t)128 << 20)
#define OMNIC_MAX_JSON_BYTES ((size_t)1 << 30)
#define OMNIC_SERVER_IMAGE_PIXELS 40000000
#define OMNIC_SERVER_JPEG_DECODER_BYTES ((int64_t)256 << 20)
#define OMNIC_SERVER_TEMPLATE_STEPS 200000
#define OMNIC_SERVER_TEMPLATE_WORK_BYTES ((size_t)256 << 20)
#define OMNIC_SERVER_TEMPLATE_OUTPUT ((size_t)16 << 20)
/* Wall time of one request, from its first byte to its last token (--request-timeout). */
#define OMNIC_SERVER_REQUEST_TIMEOUT_S 600.0
/* From a connection's (or a keep-alive request's) start until its request body is complete
 * (--read-timeout): a slow-loris client is cut off here, however steadily it trickles. */
#define OMNIC_SERVER_READ_TIMEOUT_S 30.0
/* Request bodies all connections may hold at once (--max-inflight-body). */
#define OMNIC_SERVER_INFLIGHT_BODY_BYTES ((size_t)64 << 20)
/* Threads that parse request bodies, render chat templates and tokenize (--request-workers),
 * and the jobs that may wait for them (8 per worker) before new requests get 429. */
#define OMNIC_SERVER_REQUEST_WORKERS 2
/* Bodies under this many bytes are prepared by workers of their own (8 queued per worker), so
 * a few large bodies (8 MB of JSON, base64 images) never hold up everyone's small requests; nor
 * do they count against the in-flight body budget (at most this much per connection). */
#define OMNIC_SMALL_BODY_BYTES ((size_t)64 << 10)
#define OMNIC_SMALL_REQUEST_WORKERS 2
/* How much lower the CPU priority (nice) of the big-request and media workers is than the
 * engine's and the HTTP threads': decoding images and parsing 8 MB bodies take the cores only
 * as far as the streams in flight leave them (CFS weight 335 against 1024). */
#define OMNIC_BATCH_NICE 5
#define OMNIC_SERVER_REQUEST_QUEUE_PER_WORKER 8
/* A request whose parsed body took more heap than this, or that carried images, returns the
 * freed heap to the system when it is freed (malloc_trim). */
#define OMNIC_TRIM_AFTER_BYTES ((size_t)16 << 20)
/* Stack of each worker pool thread (core/job_pool.h): the template interpreter at its depth
 * limits needs about 2 MB. */
#define OMNIC_JOB_STACK_BYTES ((size_t)16 << 20)

#endif
