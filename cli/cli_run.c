/* cli_run.c - placeholder, being written. */
extern int ptc_placeholder_cli_run;
