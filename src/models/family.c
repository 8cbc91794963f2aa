/* The family registry. */
#include <string.h>

#include "io/json.h"
#include "models/family.h"

static const omnic__family *const families[] = {
    &omnic__family_llama,    &omnic__family_qwen2,          &omnic__family_qwen3,
    &omnic__family_phi3,     &omnic__family_gemma3_text,    &omnic__family_llava,
    &omnic__family_qwen2_vl, &omnic__family_gemma3,         &omnic__family_gemma3n_text,
    &omnic__family_gemma3n,  &omnic__family_qwen3_moe,      &omnic__family_qwen3_vl,
    &omnic__family_phi4mm,   &omnic__family_phi4mm_original};

omnic_status omnic__family_find(const json_t *config, const omnic__family **out, omnic_err *err)
{
    const char *type;
    OMNIC_TRY(omnic__json_get_str(config, "model_type", true, NULL, "config.json", &type, err));
    char list[256] = "";
    for (size_t i = 0; i < sizeof families / sizeof families[0]; i++) {
        for (const char *const *t = families[i]->model_types; *t; t++) {
            if (!strcmp(*t, type)) {
                *out = families[i];
                return OMNIC_OK;
            }
            strncat(list, list[0] ? ", " : "", sizeof list - strlen(list) - 1);
            strncat(list, *t, sizeof list - strlen(list) - 1);
        }
    }
    return OMNIC_FAIL(err, OMNIC_E_UNSUPPORTED,
                      "config.json: model_type '%s' is not supported (supported: %s)", type, list);
}
