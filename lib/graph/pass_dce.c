/* pass_dce.c - placeholder, being written. */
extern int ptc_placeholder_pass_dce;
