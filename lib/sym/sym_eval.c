/* sym_eval.c - placeholder, being written. */
extern int ptc_placeholder_sym_eval;
