/* json_load.c - placeholder, being written. */
extern int ptc_placeholder_json_load;
