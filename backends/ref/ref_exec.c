/* ref_exec.c - placeholder, being written. */
extern int ptc_placeholder_ref_exec;
