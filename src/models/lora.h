/* Low-rank adapters (LoRA, PEFT's format) of a text decoder, stacked so one batched step serves
 * rows of different adapters at once: each targeted linear y = W x gets, for a row whose adapter
 * id is a >= 0, y += s_a B_a (A_a x) (PEFT: lora_B(lora_A(x)) * lora_alpha / r, dropout off),
 * computed as two grouped matmuls routed by the row's id (backend.h MATMUL_ID; id -1: no adapter,
 * no work). Adapter a's A [r_a, in] is padded with zero rows and its B [out, r_a] with zero
 * columns to the largest rank, and B is stored times s_a, which must be a power of 2 (exact: the
 * same numbers as PEFT's product then scale). Targets: the Phi-3 layout's fused qkv_proj (B split
 * into its q, k, v row blocks), o_proj, gate_up_proj (gate, up) and down_proj, every layer. */
#ifndef OMNIC_MODELS_LORA_H
#define OMNIC_MODELS_LORA_H

#include "models/text_decoder.h"

#define OMNIC_MAX_ADAPTERS 4

/* One layer's stacks (owned), E adapters, rank r: A [E * r, in], B [E * out, r]. */
typedef struct omnic__lora_layer {
    omnic__tensor *a_qkv, *b_q, *b_k, *b_v;
    omnic__tensor *a_o, *b_o;
    omnic__tensor *a_gu, *b_gate, *b_up;
    omnic__tensor *a_down, *b_down;
} omnic__lora_layer;

typedef struct omnic__lora {
    int n;                              /* adapters, ids 0..n-1 */
    int64_t rank;                       /* the largest rank: the stacks' r */
    char names[OMNIC_MAX_ADAPTERS][32]; /* "speech", "vision" */
    int64_t ranks[OMNIC_MAX_ADAPTERS];  /* each adapter's own r */
    double alphas[OMNIC_MAX_ADAPTERS];  /* lora_alpha */
    omnic__lora_layer *layers;          /* owned [n_layers] */
    int64_t n_layers;
    int64_t params; /* every adapter's A and B as stored, summed */
} omnic__lora;

/* Loads the PEFT adapters in dirs[0..n) (each: adapter_config.json with r, lora_alpha and
 * target_modules; adapter_model.safetensors with [base_model.model.]model.layers.L.<module>.
 * lora_{A,B}.weight) into a new owned *out for decoder d, named names[i]. Errors name the file
 * and the tensor: a missing half of a pair, a rank other than r, a shape that does not fit the
 * layer, a scale that is not a power of 2, a target other than the four, dropout or bias
 * settings that change numerics (E_INVALID / E_UNSUPPORTED / E_NOT_FOUND), E_NOMEM. */
omnic_status omnic__lora_load(const omnic__text_decoder *d, const char *const *dirs, const char *const *names,
                              int n, omnic__lora **out, omnic_err *err);
/* Where one adapter's tensors are: a PEFT file (key NULL: <module>.lora_{A,B}.weight) or the base
 * checkpoint of Phi-4-multimodal's original layout (key "speech": <module>.lora_{A,B}.speech.weight,
 * the other tensors skipped); r and lora_alpha from its config; what names it in messages. */
typedef struct omnic__lora_source {
    const char *name;             /* "speech", "vision" */
    const omnic__safetensors *st; /* borrowed */
    const char *key;
    int64_t r;
    double alpha;
    const char *what;
} omnic__lora_source;

/* The adapters of src[0..n) into a new owned *out for decoder d (the checks of omnic__lora_load). */
omnic_status omnic__lora_build(const omnic__text_decoder *d, const omnic__lora_source *src, int n,
                               omnic__lora **out, omnic_err *err);
void omnic__lora_free(omnic__lora *l);
/* Parameters of the adapters as stored (every adapter's A and B, summed). */
int64_t omnic__lora_params(const omnic__lora *l);

#endif
