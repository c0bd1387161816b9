/* sym_text.c - placeholder, being written. */
extern int ptc_placeholder_sym_text;
