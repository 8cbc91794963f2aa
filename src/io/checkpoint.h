/* Checkpoint discovery for a Hugging Face model directory: config files (config.json and
 * the optional generation/tokenizer/preprocessor/processor configs), the tokenizer.json path,
 * the resolved chat template, the mapped weights, and a listing of every file. */
#ifndef OMNIC_IO_CHECKPOINT_H
#define OMNIC_IO_CHECKPOINT_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "core/err.h"
#include "core/limits.h"
#include "io/safetensors.h"

typedef struct omnic__checkpoint_file {
    char *name;     /* owned; file name relative to dir */
    uint64_t bytes; /* size */
} omnic__checkpoint_file;

typedef struct omnic__checkpoint {
    char *dir;                   /* owned copy of the directory path */
    json_t *config;              /* config.json, required; owned */
    json_t *generation_config;   /* generation_config.json or NULL; owned */
    json_t *tokenizer_config;    /* tokenizer_config.json or NULL; owned */
    json_t *preprocessor_config; /* preprocessor_config.json or NULL; owned */
    json_t *processor_config;    /* processor_config.json or NULL; owned */
    char *tokenizer_json_path;   /* dir/tokenizer.json when present (not loaded here), else NULL; owned */
    /* Chat template text or NULL; owned. Resolved in this order: chat_template.jinja;
     * chat_template.json {"chat_template": str}; tokenizer_config.json "chat_template" (a
     * string, or a list of {"name", "template"}: the one named "default", else the first);
     * processor_config.json "chat_template" (a string; older processors saved it there). */
    char *chat_template;
    const char *chat_template_source; /* static file name it came from, or NULL */
    omnic__safetensors *weights;      /* owned */
    size_t n_files;
    omnic__checkpoint_file *files; /* [n_files] sorted by name: every regular file in dir */
} omnic__checkpoint;

/* Opens the checkpoint in dir (borrows). Config-style files are capped at
 * OMNIC_MAX_CONFIG_BYTES. Returns owned *out (omnic__checkpoint_close); *out unchanged on
 * failure. Errors: E_NOT_FOUND (dir or config.json missing, no weights: names the path),
 * E_CORRUPT (malformed JSON: names file, line, column; a chat template of the wrong type),
 * E_TOO_LARGE, E_IO, E_NOMEM, and everything omnic__st_open_dir returns. */
omnic_status omnic__checkpoint_open(const char *dir, omnic__checkpoint **out, omnic_err *err);

/* Frees everything and unmaps the weights; NULL is a no-op. */
void omnic__checkpoint_close(omnic__checkpoint *c);

#endif
