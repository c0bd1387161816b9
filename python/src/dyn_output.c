/* dyn_output.c - (being written: see dyn.h for its role) */
#include "dyn.h"
