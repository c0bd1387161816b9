/* ptc.c - the `ptc` command-line tool: usage text and dispatch to the
 * commands in cli_run.c. Links only the public API (<ptc/ptc.h>).
 *
 * Exit status: 0 success, 1 `check` found a mismatch, 2 usage or any error
 * (the status message is printed on stderr).
 */
#include <ptc/ptc.h>

#include <stdio.h>
#include <string.h>

/* Commands (cli_run.c): argv[0] is the command name. */
#include "cli.h"

typedef struct command {
  const char* name;
  int (*fn)(int argc, char** argv);
  const char* synopsis;
} command;

static const command commands[] = {
    {"info", cli_info, "info                       version, op count and backends"},
    {"print", cli_print, "print G.json               print the graph as a table"},
    {"run", cli_run,
     "run G.json [--backend B] [--seed N] [--inputs FILE]\n"
     "                             run and print each output's dtype, shape and checksums"},
    {"check", cli_check,
     "check G.json --backend A --against B [--seed N] [--rtol R] [--atol A]\n"
     "                             run on two backends with the same inputs and compare"},
};
#define N_COMMANDS (sizeof commands / sizeof commands[0])

static void usage(FILE* f) {
  fprintf(f, "usage: ptc <command> [arguments]\n\ncommands:\n");
  for (size_t i = 0; i < N_COMMANDS; i++) fprintf(f, "  %s\n", commands[i].synopsis);
  fprintf(f,
          "  help                       this text\n\n"
          "Without --inputs, inputs are random from --seed (default 0): floats uniform in\n"
          "[-1, 1), integers in [0, 10), booleans; symbolic sizes take the symbol's hint.\n"
          "FILE is JSON: {\"inputs\": [{\"dtype\": \"f32\", \"shape\": [2], \"data\": [1, 2]}]}.\n"
          "Defaults: --backend ref, --rtol 1e-5, --atol 1e-8.\n"
          "Exit status: 0 ok, 1 check mismatch, 2 usage or other error.\n");
}

int main(int argc, char** argv) {
  if (argc < 2) {
    usage(stderr);
    return 2;
  }
  const char* cmd = argv[1];
  if (!strcmp(cmd, "help") || !strcmp(cmd, "--help") || !strcmp(cmd, "-h")) {
    usage(stdout);
    return 0;
  }
  if (!strcmp(cmd, "--version")) {
    printf("ptc %s\n", ptc_version_string());
    return 0;
  }
  for (size_t i = 0; i < N_COMMANDS; i++)
    if (!strcmp(cmd, commands[i].name)) return commands[i].fn(argc - 1, argv + 1);
  fprintf(stderr, "ptc: unknown command '%s'\n\n", cmd);
  usage(stderr);
  return 2;
}
