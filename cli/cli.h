/* cli.h - the commands of the `ptc` tool, implemented in cli_run.c and
 * dispatched by ptc.c. Each takes argv[0] = the command name and returns the
 * process exit status. */
#ifndef PTC_CLI_H
#define PTC_CLI_H

int cli_info(int argc, char** argv);
int cli_print(int argc, char** argv);
int cli_run(int argc, char** argv);
int cli_check(int argc, char** argv);

#endif
