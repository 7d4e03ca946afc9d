#include "finding/mode.h"

namespace launchguard {

std::string_view to_string(Mode mode) {
    switch (mode) {
        case Mode::enforce:
            return "enforce";
        case Mode::patch:
            return "patch";
        case Mode::warn:
            return "warn";
        case Mode::off:
            return "off";
    }
    return "enforce";
}

std::optional<Mode> parse_mode(std::string_view text) {
    if (text == "enforce") return Mode::enforce;
    if (text == "patch") return Mode::patch;
    if (text == "warn") return Mode::warn;
    if (text == "off") return Mode::off;
    return std::nullopt;
}

}  // namespace launchguard
