/* bind.c - placeholder, being written. */
extern int ptc_placeholder_bind;
