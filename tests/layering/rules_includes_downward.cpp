// Built by the layering.rules_includes_downward test: the rules layer may
// include the profile layer below it.
#include "profile/profile.h"

int layering_downward_probe() { return 0; }
