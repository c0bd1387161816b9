/* json_attr.h - typed attribute <-> JSON codec shared by the graph JSON
 * loader/saver and the op test harness (internal).
 *
 * Encoding: {"int": 3} {"float": 1.5} {"bool": true} {"ints": [1, "s0", -1]}
 * {"floats": [0.5]} {"string": "tanh"} {"dtype": "f32"} {"sym": "s0*2"}.
 * Symbolic elements of "ints" and "sym" are expression strings parsed in the
 * graph's shape env. Floats may be the strings "nan", "inf", "-inf".
 */
#ifndef PTC_LIB_GRAPH_JSON_ATTR_H
#define PTC_LIB_GRAPH_JSON_ATTR_H

#include <cjson/cJSON.h>

#include "graph.h"

/** Parses attribute `item` (its ->string is the name) into `out`; arrays go
 * into `scratch`. Errors name the attribute: "attribute 'dim': expected
 * {\"int\": n}". */
ptc_status json_attr_parse(ptc_graph* g, const cJSON* item, ptc_arena* scratch,
                           ptc_attr* out);
/** Adds stored attribute `a` to JSON object `obj`. False on OOM. */
bool json_attr_emit(const ptc_graph* g, const gattr* a, cJSON* obj);
/** Reads a JSON number or "nan"/"inf"/"-inf" string. */
bool json_number(const cJSON* v, double* out);

#endif
