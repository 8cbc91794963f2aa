/* Subcommand entry points: each takes argv starting at the subcommand name and
 * returns the process exit status (0 ok, 1 failure, 2 usage error). */
#ifndef OMNIC_CLI_CLI_H
#define OMNIC_CLI_CLI_H

int omnic__cli_inspect(int argc, char **argv);
int omnic__cli_bench(int argc, char **argv);
int omnic__cli_run(int argc, char **argv);
int omnic__cli_tokenize(int argc, char **argv);
int omnic__cli_detokenize(int argc, char **argv);
int omnic__cli_template(int argc, char **argv);
int omnic__cli_serve(int argc, char **argv);
int omnic__cli_preprocess(int argc, char **argv);
/* `omnic preprocess` for a Qwen2-VL processor config (cli/preprocess_qwen2vl.c): variant NULL,
 * "pil" or "torchvision"; min/max_pixels 0 keep the config's; grid_out may be NULL. */
struct omnic__qwen2vl_proc_params;
int omnic__cli_preprocess_qwen2vl(const char *image_path, const struct omnic__qwen2vl_proc_params *config,
                                  const char *variant, long long min_pixels, long long max_pixels,
                                  const char *out_path, const char *grid_out);

#endif
