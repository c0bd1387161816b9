/* py_compiled.c - the CompiledFunction type (placeholder until the cache lands). */
#include "ptcpy.h"

int ptcpy_compiled_type_init(PyObject* m) { return 0; }
