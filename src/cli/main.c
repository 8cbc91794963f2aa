/* omnic command-line entry: dispatches subcommands. The only file besides core/panic.c
 * that may call exit(). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "omnic/omnic.h"

static void usage(FILE *f)
{
    fprintf(
        f,
        "omnic %s: multimodal LLM inference\n"
        "usage: omnic <command> [options]\n"
        "commands:\n"
        "  inspect -m DIR     family, dimensions, dtypes, parameters, files, modules, memory, identity\n"
        "  run -m DIR -p TEXT generate from a prompt (chat template applied unless --raw)\n"
        "  bench -m DIR       prompt-processing and generation throughput (llama-bench style)\n"
        "  tokenize -m DIR    text on stdin -> token ids (JSON), --special, --jsonl\n"
        "  detokenize -m DIR  token ids (JSON) on stdin -> text, --skip-special, --jsonl, --stream\n"
        "  template -m DIR    conversation (JSON) on stdin -> prompt rendered by the chat template\n"
        "  serve -m DIR       OpenAI-compatible HTTP server (chat/completions, completions, models, "
        "metrics)\n"
        "  preprocess --image FILE -m DIR --out FILE.npy  image -> pixel_values through the image processor\n"
        "  version            print the version\n"
        "run `omnic <command> --help` for a command's options\n",
        OMNIC_VERSION);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    const char *cmd = argv[1];
    if (!strcmp(cmd, "inspect")) return omnic__cli_inspect(argc - 1, argv + 1);
    if (!strcmp(cmd, "bench")) return omnic__cli_bench(argc - 1, argv + 1);
    if (!strcmp(cmd, "run")) return omnic__cli_run(argc - 1, argv + 1);
    if (!strcmp(cmd, "tokenize")) return omnic__cli_tokenize(argc - 1, argv + 1);
    if (!strcmp(cmd, "detokenize")) return omnic__cli_detokenize(argc - 1, argv + 1);
    if (!strcmp(cmd, "template")) return omnic__cli_template(argc - 1, argv + 1);
    if (!strcmp(cmd, "serve")) return omnic__cli_serve(argc - 1, argv + 1);
    if (!strcmp(cmd, "preprocess")) return omnic__cli_preprocess(argc - 1, argv + 1);
    if (!strcmp(cmd, "version") || !strcmp(cmd, "--version")) {
        printf("omnic %s\n", OMNIC_VERSION);
        return 0;
    }
    if (!strcmp(cmd, "help") || !strcmp(cmd, "--help") || !strcmp(cmd, "-h")) {
        usage(stdout);
        return 0;
    }
    fprintf(stderr, "omnic: unknown command '%s'\n", cmd);
    usage(stderr);
    return 2;
}
