/* pass_cse.c - placeholder, being written. */
extern int ptc_placeholder_pass_cse;
