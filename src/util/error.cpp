#include "util/error.h"

namespace launchguard {

std::string Error::to_string() const {
    std::string out;
    if (!file.empty()) {
        out += file;
        if (line > 0) out += ":" + std::to_string(line);
        out += ": ";
    }
    if (!field.empty()) out += field + ": ";
    out += message;
    return out;
}

Error make_error(std::string message) { return Error{{}, 0, {}, std::move(message)}; }

Error make_file_error(std::string file, int line, std::string message) {
    return Error{std::move(file), line, {}, std::move(message)};
}

}  // namespace launchguard
