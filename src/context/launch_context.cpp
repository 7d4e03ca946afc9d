#include "context/launch_context.h"

namespace launchguard {

std::string_view to_string(Runtime runtime) {
    switch (runtime) {
        case Runtime::bare:
            return "bare";
        case Runtime::enroot:
            return "enroot";
        case Runtime::pyxis:
            return "pyxis";
        case Runtime::kubernetes:
            return "kubernetes";
        case Runtime::unknown:
            return "unknown";
    }
    return "unknown";
}

}  // namespace launchguard
