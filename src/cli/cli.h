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

#endif
