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
#define OMNIC_MAX_HEAD_DIM 1024

#endif
