/* libFuzzer target for config JSON: omnic__json_parse / omnic__json_parse_nodup, the typed
 * getters over the fields a text config reads, including a nested text_config, and the family
 * config parsers themselves (text, LLaVA vision, Qwen2-VL tower). Any input must give OMNIC_OK
 * or an error with a message, never a crash. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "io/json.h"
#include "models/family.h"
#include "models/qwen2vl_vision.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(omnic_status rc, const omnic_err *err)
{
    if (rc != OMNIC_OK &&
        (err->code != rc || memchr(err->msg, '\0', sizeof err->msg) == NULL || !err->msg[0]))
        __builtin_trap();
}

/* What omnic__model_open parses before it touches weights. */
static void parse_family(const json_t *cfg)
{
    omnic_err err;
    omnic_err_clear(&err);
    const omnic__family *fam = NULL;
    omnic_status rc = omnic__family_find(cfg, &fam, &err);
    check(rc, &err);
    if (rc != OMNIC_OK) return;
    omnic__text_config text;
    rc = fam->parse_config(cfg, "config.json", &text, &err);
    check(rc, &err);
    if (rc != OMNIC_OK) return;
    if (fam->parse_vision) {
        omnic__vision_config v;
        check(fam->parse_vision(cfg, "config.json", &text, &v, &err), &err);
    }
    if (fam->media[OMNIC_MODALITY_IMAGE] == &omnic__media_qwen2vl_image) {
        omnic__qvit_config q;
        check(omnic__qvit_config_parse(cfg, "config.json", text.hidden, &q, &err), &err);
    }
}

static void read_fields(const json_t *cfg, const char *what)
{
    omnic_err err;
    int64_t i;
    double d;
    bool b;
    const char *s;
    const json_t *o;
    static const char *const ints[] = {"hidden_size",         "num_hidden_layers",       "vocab_size",
                                       "num_attention_heads", "max_position_embeddings", "head_dim"};
    for (size_t k = 0; k < sizeof ints / sizeof ints[0]; k++)
        check(omnic__json_get_i64(cfg, ints[k], k % 2 == 0, 1, 1, 1 << 24, what, &i, &err), &err);
    check(omnic__json_get_i64(cfg, "bos_token_id", false, -1, INT64_MIN, INT64_MAX, what, &i, &err), &err);
    check(omnic__json_get_f64(cfg, "rms_norm_eps", true, 1e-6, 0, 1, what, &d, &err), &err);
    check(omnic__json_get_f64(cfg, "rope_theta", false, 1e4, -1e300, 1e300, what, &d, &err), &err);
    check(omnic__json_get_bool(cfg, "tie_word_embeddings", false, false, what, &b, &err), &err);
    if (omnic__json_get_str(cfg, "model_type", true, NULL, what, &s, &err) == OMNIC_OK &&
        strlen(s) > (1u << 30))
        __builtin_trap();
    o = NULL;
    check(omnic__json_get_array(cfg, "architectures", false, what, &o, &err), &err);
    if (o) {
        for (size_t k = 0; k < json_array_size(o) && k < 4; k++)
            (void)json_is_string(json_array_get(o, k));
    }
    o = NULL;
    check(omnic__json_get_obj(cfg, "rope_scaling", false, what, &o, &err), &err);
    if (o) check(omnic__json_get_f64(o, "factor", true, 1, 1, 1e6, "rope_scaling", &d, &err), &err);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_t *j = NULL;
    omnic_err err;
    omnic_err_clear(&err);
    omnic_status rc = omnic__json_parse((const char *)data, size, "fuzz.json", &j, &err);
    check(rc, &err);
    if (rc == OMNIC_OK) {
        read_fields(j, "config.json");
        const json_t *tc = NULL;
        if (omnic__json_get_obj(j, "text_config", false, "config.json", &tc, &err) == OMNIC_OK && tc)
            read_fields(tc, "config.json: text_config");
        parse_family(j);
        json_decref(j);
    }
    j = NULL;
    omnic_err_clear(&err);
    rc = omnic__json_parse_nodup((const char *)data, size, "fuzz.json", &j, &err);
    check(rc, &err);
    json_decref(j);
    return 0;
}
