// The modes a launch is judged in (docs/design/RULES.md, "Modes"). A header
// of its own so that code which only names modes (plugstack arguments, the
// user's --launchguard option) links without the engine.
#pragma once

#include <optional>
#include <string_view>

namespace launchguard {

enum class Mode { enforce, patch, warn, off };
std::string_view to_string(Mode mode);
std::optional<Mode> parse_mode(std::string_view text);

}  // namespace launchguard
