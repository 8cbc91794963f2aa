/* `omnic inspect -m DIR`: what a checkpoint is and what loading it costs. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/args.h"
#include "cli/cli.h"
#include "core/mem.h"
#include "engine/modality.h"
#include "models/model.h"

static void human(char *buf, size_t n, double bytes)
{
    const char *u[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    int i = 0;
    while (bytes >= 1024 && i < 4)
        bytes /= 1024, i++;
    snprintf(buf, n, i ? "%.2f %s" : "%.0f %s", bytes, u[i]);
}

static void usage(FILE *f)
{
    fprintf(f, "usage: omnic inspect -m DIR [--ctx N] [--threads N] [--backend cpu|ref] [--kv f16|f32]\n"
               "                     [--quant q8_0|q4_0] [--max-image-pixels N]\n");
}

int omnic__cli_inspect(int argc, char **argv)
{
    omnic__model_opts opts = {.kv_dtype = OMNIC_DTYPE_F16, .mmap_weights = true}; /* nothing decodes here */
    const char *dir = NULL;
    int64_t max_image_pixels = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return 0;
        }
        if (omnic__arg_str(argc, argv, &i, "-m", "--model", &dir)) continue;
        if (omnic__arg_str(argc, argv, &i, NULL, "--backend", &opts.backend)) continue;
        if (omnic__arg_str(argc, argv, &i, NULL, "--quant", &opts.quant)) continue;
        int64_t v;
        int r = omnic__arg_i64(argc, argv, &i, "-c", "--ctx", 1, INT32_MAX, &v);
        if (r < 0) return 2;
        if (r) {
            opts.ctx = v;
            continue;
        }
        r = omnic__arg_i64(argc, argv, &i, NULL, "--max-image-pixels", 1, OMNIC_MAX_IMAGE_PIXELS,
                           &max_image_pixels);
        if (r < 0) return 2;
        if (r) continue;
        r = omnic__arg_i64(argc, argv, &i, "-t", "--threads", 1, 256, &v);
        if (r < 0) return 2;
        if (r) {
            opts.threads = (int)v;
            continue;
        }
        const char *kv;
        if (omnic__arg_str(argc, argv, &i, NULL, "--kv", &kv)) {
            if (!strcmp(kv, "f32"))
                opts.kv_dtype = OMNIC_DTYPE_F32;
            else if (strcmp(kv, "f16") != 0) {
                fprintf(stderr, "omnic inspect: --kv must be f16 or f32, got '%s'\n", kv);
                return 2;
            }
            continue;
        }
        fprintf(stderr, "omnic inspect: unknown option '%s'\n", a);
        usage(stderr);
        return 2;
    }
    if (!dir) {
        fprintf(stderr, "omnic inspect: -m DIR is required\n");
        usage(stderr);
        return 2;
    }
    omnic_err err;
    omnic_err_clear(&err);
    omnic__model *m;
    if (omnic__model_open(dir, &opts, &m, &err) != OMNIC_OK) {
        fprintf(stderr, "omnic inspect: %s: %s\n", dir, err.msg);
        return 1;
    }
    const omnic__text_config *c = &m->dec.cfg;
    const omnic__checkpoint *ck = m->ckpt;
    char b1[32], b2[32], b3[32];
    printf("model:      %s\n", dir);
    printf("family:     %s\n", m->family->name);
    printf(
        "text:       vocab %lld, hidden %lld, layers %lld, heads %lld (kv %lld, head_dim %lld), ffn %lld\n",
        (long long)c->vocab, (long long)c->hidden, (long long)c->n_layers, (long long)c->n_heads,
        (long long)c->n_kv_heads, (long long)c->head_dim, (long long)c->intermediate);
    static const char *const rope_names[] = {"default", "llama3 scaling", "linear scaling", "LongRoPE"};
    printf("rope:       theta %g, %s, %lld of %lld dims rotate", c->rope_theta, rope_names[c->rope_type],
           (long long)c->n_rot, (long long)c->head_dim);
    if (c->rope_local_theta > 0) printf("; sliding layers theta %g", c->rope_local_theta);
    printf("; max positions %lld\n", (long long)c->max_pos);
    printf("features:  %s%s%s%s%s%s", c->qkv_bias ? " qkv-bias" : "", c->qk_norm ? " qk-norm" : "",
           c->norm_one_plus ? " (1+w)-norms" : "", c->sandwich_norms ? " sandwich-norms" : "",
           c->fused_qkv ? " fused-qkv" : "", c->act == OMNIC_ACT_GELU_TANH ? " geglu" : " swiglu");
    if (c->sliding_window) printf(" sliding-window %lld", (long long)c->sliding_window);
    if (c->final_softcap > 0) printf(" final-softcap %g", (double)c->final_softcap);
    if (c->embed_scale > 0) printf(" embed-scale %g", (double)c->embed_scale);
    if (c->altup > 0) {
        int sparse = 0;
        for (int64_t l = 0; l < c->n_layers; l++)
            sparse += c->sparsity_z[l] != 0;
        printf(" altup x%lld laurel-rank %lld per-layer-embeddings %lld sparse-layers %d",
               (long long)c->altup, (long long)c->laurel_rank, (long long)c->ple_dim, sparse);
    }
    printf("\n");
    if (c->n_experts > 0) { /* mixture of experts: what a token reads of them */
        int64_t routed = 0, total = 0, pb = 0;
        for (int64_t l = 0; l < c->n_layers; l++)
            routed += c->layer_moe[l] != 0;
        omnic__text_decoder_param_stats(&m->dec, &total, &pb);
        const int64_t per_expert = 3 * c->moe_intermediate * c->hidden;
        const int64_t idle = routed * (c->n_experts - c->experts_per_tok) * per_expert;
        printf(
            "experts:    %lld of %lld layers routed: top %lld of %lld experts (ffn %lld%s); parameters per "
            "token %lld of %lld (%.1f%%)\n",
            (long long)routed, (long long)c->n_layers, (long long)c->experts_per_tok, (long long)c->n_experts,
            (long long)c->moe_intermediate, c->norm_topk ? ", renormalized" : "", (long long)(total - idle),
            (long long)total, 100.0 * (double)(total - idle) / (double)(total ? total : 1));
    }
    if (c->n_kv_layers < c->n_layers) {
        printf("kv cache:   %lld of %lld layers own one; shared:", (long long)c->n_kv_layers,
               (long long)c->n_layers);
        for (int64_t l = c->n_kv_layers; l < c->n_layers; l++)
            printf(" %lld<-%d", (long long)l, c->kv_layer[l]);
        printf("\n");
    }
    printf("lm head:    %s\n", c->tie_embeddings ? "tied to embeddings" : "separate");
    /* dtypes over all stored tensors */
    size_t n = omnic__st_count(ck->weights), by_dtype[OMNIC_DTYPE_COUNT] = {0};
    for (size_t i = 0; i < n; i++)
        by_dtype[omnic__st_at(ck->weights, i)->dtype]++;
    printf("dtypes:    ");
    for (int t = 0; t < OMNIC_DTYPE_COUNT; t++)
        if (by_dtype[t]) printf(" %s x %zu", omnic_dtype_name((omnic_dtype)t), by_dtype[t]);
    printf(" (%zu tensors in %zu shard%s)\n", n, omnic__st_shard_count(ck->weights),
           omnic__st_shard_count(ck->weights) == 1 ? "" : "s");
    int64_t params, pbytes;
    omnic__text_decoder_param_stats(&m->dec, &params, &pbytes);
    if (m->dec.n_qweights) {
        human(b1, sizeof b1, (double)m->dec.stored_bytes);
        human(b2, sizeof b2, (double)pbytes);
        printf("parameters: %lld (%.3f B), %s as stored, %s as loaded (%zu linear weights in %s)\n",
               (long long)params, (double)params / 1e9, b1, b2, m->dec.n_qweights,
               omnic_dtype_name(m->dec.qweights[0]->dtype));
    } else {
        human(b1, sizeof b1, (double)pbytes);
        printf("parameters: %lld (%.3f B), %s as stored and as loaded\n", (long long)params,
               (double)params / 1e9, b1);
    }
    printf("files:\n");
    for (size_t i = 0; i < ck->n_files; i++) {
        human(b1, sizeof b1, (double)ck->files[i].bytes);
        printf("  %-40s %12s\n", ck->files[i].name, b1);
    }
    printf("chat template: %s\n", ck->chat_template_source ? ck->chat_template_source : "none");
    printf("inputs:    "); /* the predicate /v1/models and the server's request checks use */
    for (int k = 0; k < OMNIC_MODALITY_COUNT; k++)
        if (omnic__model_accepts(m, (omnic__modality)k))
            printf(" %s", omnic__modality_name((omnic__modality)k));
    printf("\n");
    printf("backend:    %s, %d thread%s\n", m->backend->name, m->prefill.nth, m->prefill.nth == 1 ? "" : "s");
    printf("modules (context %lld rows per slot, %d slot%s, prefill chunk %lld):\n", (long long)m->capacity,
           m->n_slots, m->n_slots == 1 ? "" : "s", (long long)m->chunk);
    omnic__module_print(&m->prefill, stdout);
    omnic__module_print(&m->decode, stdout);
    omnic__module_print(&m->embed_prefill, stdout);
    for (int k = 0; k < OMNIC_MODALITY_COUNT; k++)
        if (m->media[k].ops && m->media[k].ops->ready(m)) m->media[k].ops->describe(m, stdout);
    if (omnic__model_accepts(m, OMNIC_MODALITY_IMAGE)) { /* the processor as requests get it */
        omnic__media_proc p;
        omnic_err perr;
        if (omnic__media_proc_init(&p, m, OMNIC_MODALITY_IMAGE, max_image_pixels, &perr) != OMNIC_OK) {
            printf("images:     processor config refused: %s\n", perr.msg);
        } else {
            const int64_t mp = omnic__media_proc_max_pixels(&p, false),
                          own = omnic__media_proc_max_pixels(&p, true);
            if (!mp)
                printf("images:     resized to the encoder's fixed input size\n");
            else if (mp == own)
                printf("images:     resized to at most %lld pixels (the checkpoint's max_pixels)\n",
                       (long long)mp);
            else
                printf("images:     resized to at most %lld pixels (%s; the checkpoint's max_pixels: %lld)\n",
                       (long long)mp,
                       max_image_pixels == mp ? "--max-image-pixels" : "the encoder's capacity",
                       (long long)own);
            omnic__media_proc_deinit(&p);
        }
    }
    human(b1, sizeof b1, (double)omnic__model_planned_bytes(m));
    human(b2, sizeof b2, (double)omnic__model_kv_bytes(m));
    human(b3, sizeof b3, (double)(omnic__model_planned_bytes(m) + omnic__model_kv_bytes(m)));
    printf("memory:     modules %s + KV cache (%s, %d slot%s x %lld rows) %s = %s beyond the %s weights\n",
           b1, omnic_dtype_name(m->kv_dtype), m->n_slots, m->n_slots == 1 ? "" : "s", (long long)m->capacity,
           b2, b3, m->dec.n_qweights ? "quantized" : "mapped");
    size_t rss, peak;
    if (omnic__mem_rss(&rss, &peak)) {
        human(b1, sizeof b1, (double)rss);
        human(b2, sizeof b2, (double)peak);
        printf(
            "resident:   %s now, %s peak (after load; untouched pages of mapped weights are not resident)\n",
            b1, b2);
    }
    printf("identity:   %s\n", m->identity);
    omnic__model_close(m);
    return 0;
}
