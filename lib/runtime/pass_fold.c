/* pass_fold.c - placeholder, being written. */
extern int ptc_placeholder_pass_fold;
