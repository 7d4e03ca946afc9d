// Built by the layering.rules_includes_upward test, which expects the compiler
// to refuse it: the engine sits above the rules, so the rules layer cannot
// see its headers.
#include "engine/engine.h"

int layering_upward_probe() { return 0; }
