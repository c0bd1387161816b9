/* clone.c - placeholder, being written. */
extern int ptc_placeholder_clone;
