/* sym_simplify.c - placeholder, being written. */
extern int ptc_placeholder_sym_simplify;
