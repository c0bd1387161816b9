/* ref_random.c - placeholder, being written. */
extern int ptc_placeholder_ref_random;
