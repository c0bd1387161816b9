/* dyn_module.c - registers the bytecode capture (dyn_*.c) in ptc._C:
 * its types and the _C.dyn_* functions used by ptc/dynamo.py. */
#include "dyn.h"

int ptcpy_dyn_init(PyObject* m) {
  (void)m;
  return 0;
}
