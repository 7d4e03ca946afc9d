#include "engine/mode_policy.h"

#include <algorithm>

namespace launchguard {

int strictness(Mode mode) {
    switch (mode) {
        case Mode::off:
            return 0;
        case Mode::warn:
            return 1;
        case Mode::patch:
            return 2;
        case Mode::enforce:
            return 3;
    }
    return 3;
}

bool UserModePolicy::may_choose(Mode requested) const {
    if (!allowed.empty()) return std::find(allowed.begin(), allowed.end(), requested) != allowed.end();
    return requested == Mode::warn || strictness(requested) >= strictness(site_mode);
}

std::string UserModePolicy::describe_allowed() const {
    std::string out;
    for (Mode m : {Mode::enforce, Mode::patch, Mode::warn, Mode::off}) {
        if (may_choose(m)) out += (out.empty() ? "" : ", ") + std::string(to_string(m));
    }
    return out;
}

}  // namespace launchguard
