#include "probe/text_file.h"


namespace launchguard {

std::optional<std::string> read_trimmed(const std::string& path) {
    auto text = read_text_file(path, kMaxAttributeBytes);
    if (!text) return std::nullopt;
    return std::string(trim(*text));
}

std::string_view trim(std::string_view s) {
    auto space = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; };
    while (!s.empty() && space(s.front())) s.remove_prefix(1);
    while (!s.empty() && space(s.back())) s.remove_suffix(1);
    return s;
}

std::string under_root(const std::string& root, std::string_view relative) {
    while (!relative.empty() && relative.front() == '/') relative.remove_prefix(1);
    std::string base = root.empty() ? std::string("/") : root;
    if (base.back() != '/') base += '/';
    return base + std::string(relative);
}

}  // namespace launchguard
