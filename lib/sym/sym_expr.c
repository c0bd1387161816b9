/* sym_expr.c - placeholder, being written. */
extern int ptc_placeholder_sym_expr;
