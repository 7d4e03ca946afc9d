#include "probe/text_file.h"

namespace launchguard {

std::optional<std::string> read_trimmed(const std::string& path) {
    auto text = read_text_file(path, kMaxAttributeBytes);
    if (!text) return std::nullopt;
    return std::string(trim(*text));
}

std::string under_root(const std::string& root, std::string_view relative) {
    while (!relative.empty() && relative.front() == '/') relative.remove_prefix(1);
    std::string base = root.empty() ? std::string("/") : root;
    if (base.back() != '/') base += '/';
    return base + std::string(relative);
}

}  // namespace launchguard
