/* sym_env.c - placeholder, being written. */
extern int ptc_placeholder_sym_env;
