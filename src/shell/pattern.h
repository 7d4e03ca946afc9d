// A value whose only unknowns are references to variables the shell does
// not set itself (Word::pattern: "${HCA}_0"), resolved once the environment
// the shell starts in is known (a container's env list).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace launchguard::shell {

// `pattern` with $NAME and ${NAME} replaced from `env`. A name `env` lacks
// leaves the result unknown, since what starts the shell may set it (an
// empty guess could invent a finding); so does any other expansion ($(cmd),
// ${X:-y}, $1).
std::optional<std::string> expand_pattern(std::string_view pattern,
                                          const std::map<std::string, std::string, std::less<>>& env);

}  // namespace launchguard::shell
