// yaml-cpp 0.7 (Debian 12) never returns on one kind of invalid YAML: a
// document whose root is a flow collection followed by a comma ("{a: b},",
// "[a], b"). It loops while allocating, gigabytes within seconds, so a
// ten-byte manifest or profile could take launchguard down. Every YAML input
// passes this check before yaml-cpp sees it.
#pragma once

#include <string>
#include <string_view>

#include "util/error.h"

namespace launchguard {

// An error naming `origin` and the line of the comma when a document's root
// flow collection is followed by ','; valid YAML always passes. Only a
// document that starts with '[' or '{' is scanned (inside a flow collection
// there are no block scalars to mistake for syntax), honouring quotes and
// comments.
Status check_yaml_flow_roots(std::string_view text, const std::string& origin);

}  // namespace launchguard
