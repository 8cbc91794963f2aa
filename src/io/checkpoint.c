/* Checkpoint discovery: loads the config files of a Hugging Face model directory, resolves
 * the chat template from its possible homes, maps the weights and lists the files. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "io/checkpoint.h"
#include "io/file.h"
#include "io/json.h"

/* Loads dir/name as a config-style JSON object into *out; a missing file leaves *out NULL. */
static omnic_status load_optional(const char *dir, const char *name, json_t **out, omnic_err *err)
{
    char *path = omnic__path_join(dir, name);
    if (!path) return OMNIC_FAIL(err, OMNIC_E_NOMEM, "%s: out of memory", dir);
    omnic_status rc = omnic__json_load_file(path, OMNIC_MAX_CONFIG_BYTES, out, err);
    if (rc == OMNIC_E_NOT_FOUND) {
        *out = NULL;
        rc = OMNIC_OK;
    }
    omnic_free(path);
    return rc;
}

/* tokenizer_config.json / processor_config.json "chat_template": a string, or a list of
 * {"name", "template"} (the one named "default", else the first). *out borrowed or NULL. */
static omnic_status template_from_config(const json_t *cfg, const char *file, const char **out,
                                         omnic_err *err)
{
    *out = NULL;
    if (!cfg) return OMNIC_OK;
    const json_t *v = json_object_get(cfg, "chat_template");
    if (!v || json_is_null(v)) return OMNIC_OK;
    if (json_is_string(v)) {
        *out = json_string_value(v);
        return OMNIC_OK;
    }
    if (!json_is_array(v))
        return OMNIC_FAIL(err, OMNIC_E_CORRUPT,
                          "%s: 'chat_template' is %s, expected a string or a list of {name, template}", file,
                          omnic__json_type_phrase(v));
    const char *first = NULL;
    for (size_t i = 0; i < json_array_size(v); i++) {
        const json_t *e = json_array_get(v, i);
        const json_t *name = json_is_object(e) ? json_object_get(e, "name") : NULL;
        const json_t *tmpl = json_is_object(e) ? json_object_get(e, "template") : NULL;
        if (!json_is_string(name) || !json_is_string(tmpl))
            return OMNIC_FAIL(err, OMNIC_E_CORRUPT,
                              "%s: 'chat_template'[%zu] is not {\"name\": string, \"template\": string} "
                              "(name is %s, template is %s)",
                              file, i, omnic__json_type_phrase(name), omnic__json_type_phrase(tmpl));
        if (!first) first = json_string_value(tmpl);
        if (!strcmp(json_string_value(name), "default")) {
            *out = json_string_value(tmpl);
            return OMNIC_OK;
        }
    }
    *out = first;
    return OMNIC_OK;
}

/* Fills c->chat_template / c->chat_template_source (both stay NULL when no source has one). */
static omnic_status resolve_chat_template(omnic__checkpoint *c, omnic_err *err)
{
    omnic_status rc = OMNIC_OK;
    char *path = NULL, *text = NULL;
    json_t *j = NULL;
    size_t len = 0;

    /* 1. chat_template.jinja: the template as plain text. */
    path = omnic__path_join(c->dir, "chat_template.jinja");
    if (!path) goto nomem;
    rc = omnic__read_file(path, OMNIC_MAX_CONFIG_BYTES, &text, &len, err);
    if (rc == OMNIC_OK) {
        size_t nul = strlen(text);
        if (nul != len) {
            rc = OMNIC_FAIL(err, OMNIC_E_CORRUPT, "%s: NUL byte at offset %zu of %zu", path, nul, len);
            goto out;
        }
        c->chat_template = text;
        c->chat_template_source = "chat_template.jinja";
        text = NULL;
        goto out;
    }
    if (rc != OMNIC_E_NOT_FOUND) goto out;
    omnic_free(path);
    path = NULL;

    /* 2. chat_template.json: {"chat_template": "..."}. */
    path = omnic__path_join(c->dir, "chat_template.json");
    if (!path) goto nomem;
    rc = omnic__json_load_file(path, OMNIC_MAX_CONFIG_BYTES, &j, err);
    if (rc == OMNIC_OK) {
        const char *s = NULL;
        rc = omnic__json_get_str(j, "chat_template", true, NULL, path, &s, err);
        if (rc != OMNIC_OK) goto out;
        if (!(c->chat_template = omnic_strdup(s))) goto nomem;
        c->chat_template_source = "chat_template.json";
        goto out;
    }
    if (rc != OMNIC_E_NOT_FOUND) goto out;
    rc = OMNIC_OK;

    /* 3. tokenizer_config.json, 4. processor_config.json. */
    const char *s = NULL;
    rc = template_from_config(c->tokenizer_config, "tokenizer_config.json", &s, err);
    if (rc != OMNIC_OK) goto out;
    if (s) {
        if (!(c->chat_template = omnic_strdup(s))) goto nomem;
        c->chat_template_source = "tokenizer_config.json";
        goto out;
    }
    rc = template_from_config(c->processor_config, "processor_config.json", &s, err);
    if (rc != OMNIC_OK) goto out;
    if (s) {
        if (!(c->chat_template = omnic_strdup(s))) goto nomem;
        c->chat_template_source = "processor_config.json";
    }
    goto out;
nomem:
    rc = OMNIC_FAIL(err, OMNIC_E_NOMEM, "%s: out of memory resolving the chat template", c->dir);
out:
    json_decref(j);
    omnic_free(text);
    omnic_free(path);
    return rc;
}

static int file_cmp(const void *a, const void *b)
{
    return strcmp(((const omnic__checkpoint_file *)a)->name, ((const omnic__checkpoint_file *)b)->name);
}

/* Lists the regular files at the top level of c->dir into c->files, sorted by name. */
static omnic_status list_files(omnic__checkpoint *c, omnic_err *err)
{
    omnic_status rc = OMNIC_OK;
    DIR *d = opendir(c->dir);
    if (!d) return OMNIC_FAIL(err, OMNIC_E_IO, "%s: cannot list directory: %s", c->dir, strerror(errno));
    size_t cap = 0;
    const struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        struct stat sb;
        if (fstatat(dirfd(d), de->d_name, &sb, 0) != 0 || !S_ISREG(sb.st_mode)) continue;
        if (c->n_files >= OMNIC_MAX_CHECKPOINT_FILES) {
            rc = OMNIC_FAIL(err, OMNIC_E_TOO_LARGE, "%s: more than %d files", c->dir,
                            OMNIC_MAX_CHECKPOINT_FILES);
            goto out;
        }
        if (c->n_files == cap) {
            size_t ncap = cap ? cap * 2 : 16, bytes;
            omnic__checkpoint_file *nf;
            if (!omnic_size_mul(&bytes, ncap, sizeof *nf) || !(nf = omnic_realloc(c->files, bytes))) {
                rc = OMNIC_FAIL(err, OMNIC_E_NOMEM, "%s: out of memory listing %zu files", c->dir, ncap);
                goto out;
            }
            c->files = nf;
            cap = ncap;
        }
        omnic__checkpoint_file *f = &c->files[c->n_files];
        f->name = omnic_strdup(de->d_name);
        if (!f->name) {
            rc = OMNIC_FAIL(err, OMNIC_E_NOMEM, "%s: out of memory listing files", c->dir);
            goto out;
        }
        f->bytes = sb.st_size > 0 ? (uint64_t)sb.st_size : 0;
        c->n_files++;
    }
    if (c->n_files > 1) qsort(c->files, c->n_files, sizeof *c->files, file_cmp);
out:
    closedir(d);
    return rc;
}

omnic_status omnic__checkpoint_open(const char *dir, omnic__checkpoint **out, omnic_err *err)
{
    omnic_status rc = OMNIC_OK;
    char *path = NULL;
    omnic__checkpoint *c = NULL;

    bool exists, is_dir, is_reg;
    OMNIC_TRY(omnic__path_stat(dir, &exists, NULL, &is_dir, NULL, err));
    if (!exists) return OMNIC_FAIL(err, OMNIC_E_NOT_FOUND, "%s: no such checkpoint directory", dir);
    if (!is_dir)
        return OMNIC_FAIL(err, OMNIC_E_INVALID, "%s: not a directory (expected a checkpoint directory)", dir);

    c = omnic_alloc_array(1, sizeof *c);
    if (!c || !(c->dir = omnic_strdup(dir))) goto nomem;

    if (!(path = omnic__path_join(dir, "config.json"))) goto nomem;
    rc = omnic__json_load_file(path, OMNIC_MAX_CONFIG_BYTES, &c->config, err);
    if (rc == OMNIC_E_NOT_FOUND) {
        rc = OMNIC_FAIL(err, OMNIC_E_NOT_FOUND, "%s: not found (a checkpoint directory needs config.json)",
                        path);
        goto fail;
    }
    if (rc != OMNIC_OK) goto fail;
    omnic_free(path);
    path = NULL;

    if ((rc = load_optional(dir, "generation_config.json", &c->generation_config, err)) != OMNIC_OK)
        goto fail;
    if ((rc = load_optional(dir, "tokenizer_config.json", &c->tokenizer_config, err)) != OMNIC_OK) goto fail;
    if ((rc = load_optional(dir, "preprocessor_config.json", &c->preprocessor_config, err)) != OMNIC_OK)
        goto fail;
    if ((rc = load_optional(dir, "processor_config.json", &c->processor_config, err)) != OMNIC_OK) goto fail;

    if (!(path = omnic__path_join(dir, "tokenizer.json"))) goto nomem;
    if ((rc = omnic__path_stat(path, &exists, &is_reg, NULL, NULL, err)) != OMNIC_OK) goto fail;
    if (exists && is_reg) {
        c->tokenizer_json_path = path;
        path = NULL;
    }

    if ((rc = resolve_chat_template(c, err)) != OMNIC_OK) goto fail;
    if ((rc = omnic__st_open_dir(dir, &c->weights, err)) != OMNIC_OK) goto fail;
    if ((rc = list_files(c, err)) != OMNIC_OK) goto fail;

    omnic_free(path);
    *out = c;
    return OMNIC_OK;
nomem:
    rc = OMNIC_FAIL(err, OMNIC_E_NOMEM, "%s: out of memory opening the checkpoint", dir);
fail:
    omnic_free(path);
    omnic__checkpoint_close(c);
    return rc;
}

void omnic__checkpoint_close(omnic__checkpoint *c)
{
    if (!c) return;
    json_decref(c->config);
    json_decref(c->generation_config);
    json_decref(c->tokenizer_config);
    json_decref(c->preprocessor_config);
    json_decref(c->processor_config);
    omnic_free(c->tokenizer_json_path);
    omnic_free(c->chat_template);
    omnic__st_close(c->weights);
    for (size_t i = 0; i < c->n_files; i++)
        omnic_free(c->files[i].name);
    omnic_free(c->files);
    omnic_free(c->dir);
    omnic_free(c);
}
