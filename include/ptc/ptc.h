/* ptc.h - umbrella header of libptc, the embeddable tensor-program compiler.
 * Include this one; it pulls in every stable public header. */
#ifndef PTC_H
#define PTC_H
#include "ptc_core.h"
#include "ptc_graph.h"
#include "ptc_run.h"
#endif /* PTC_H */
