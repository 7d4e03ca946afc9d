#include "shell/pattern.h"

#include "shell/lexer.h"

namespace launchguard::shell {

std::optional<std::string> expand_pattern(std::string_view pattern,
                                          const std::map<std::string, std::string, std::less<>>& env) {
    std::string out;
    for (std::size_t i = 0; i < pattern.size(); ++i) {
        if (pattern[i] == '`') return std::nullopt;
        if (pattern[i] != '$') {
            out += pattern[i];
            continue;
        }
        std::string_view rest = pattern.substr(i + 1);
        std::size_t length = 0;
        std::string_view name;
        if (rest.starts_with('{')) {
            std::size_t close = rest.find('}');
            if (close == std::string_view::npos) return std::nullopt;
            name = rest.substr(1, close - 1);
            length = close + 1;
        } else {
            while (length < rest.size() && is_name_char(rest[length])) ++length;
            name = rest.substr(0, length);
        }
        if (!is_name(name)) return std::nullopt;  // $(cmd), ${X:-y}, $1, $@
        auto it = env.find(name);
        if (it == env.end()) return std::nullopt;
        out += it->second;
        i += length;
    }
    return out;
}

}  // namespace launchguard::shell
