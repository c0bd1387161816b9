/* json_save.c - placeholder, being written. */
extern int ptc_placeholder_json_save;
