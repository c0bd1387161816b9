/* backend_registry.c - placeholder, being written. */
extern int ptc_placeholder_backend_registry;
