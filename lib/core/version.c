/* version.c - runtime version queries and ptc_free for library-returned memory. */
#include "core.h"

#include <stdlib.h>

uint32_t ptc_version_number(void) { return PTC_VERSION_NUMBER; }
const char* ptc_version_string(void) { return PTC_VERSION_STRING; }
void ptc_free(void* p) { free(p); }
