/* ref_tensor.c - placeholder, being written. */
extern int ptc_placeholder_ref_tensor;
