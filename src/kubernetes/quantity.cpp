#include "kubernetes/quantity.h"

#include <array>
#include <cmath>
#include <string>
#include <utility>

namespace launchguard::kubernetes {
namespace {

// Value of the quantity in its base unit (cores, bytes), or nullopt when it
// is not a quantity the API server would accept.
std::optional<long double> parse_base_units(std::string_view text) {
    if (text.empty()) return std::nullopt;
    std::size_t end = 0;
    if (end < text.size() && (text[end] == '+' || text[end] == '-')) ++end;
    bool digits = false;
    while (end < text.size() && ((text[end] >= '0' && text[end] <= '9') || text[end] == '.')) {
        digits = digits || text[end] != '.';
        ++end;
    }
    if (!digits) return std::nullopt;
    std::string number(text.substr(0, end));
    std::string_view suffix = text.substr(end);
    long double multiplier = 1;
    static constexpr std::array<std::pair<std::string_view, long double>, 13> kSuffixes{{
        {"", 1.0L},
        {"m", 1e-3L},
        {"k", 1e3L},
        {"M", 1e6L},
        {"G", 1e9L},
        {"T", 1e12L},
        {"P", 1e15L},
        {"Ki", 1024.0L},
        {"Mi", 1048576.0L},
        {"Gi", 1073741824.0L},
        {"Ti", 1099511627776.0L},
        {"Pi", 1125899906842624.0L},
        {"E", 1e18L},
    }};
    bool matched = false;
    for (const auto& [name, scale] : kSuffixes) {
        if (suffix == name) {
            multiplier = scale;
            matched = true;
            break;
        }
    }
    if (!matched && (suffix.starts_with('e') || suffix.starts_with('E')) && suffix.size() > 1) {
        std::string exponent(suffix.substr(1));
        char* stop = nullptr;
        long value = std::strtol(exponent.c_str(), &stop, 10);
        if (stop == nullptr || *stop != '\0' || value < -18 || value > 18) return std::nullopt;
        multiplier = std::pow(10.0L, static_cast<long double>(value));
        matched = true;
    }
    if (!matched) return std::nullopt;
    char* stop = nullptr;
    long double value = std::strtold(number.c_str(), &stop);
    if (stop == nullptr || *stop != '\0' || value < 0) return std::nullopt;
    return value * multiplier;
}

std::optional<std::int64_t> scaled_up(std::string_view text, long double unit) {
    auto value = parse_base_units(text);
    if (!value) return std::nullopt;
    long double scaled = std::ceil(*value / unit - 1e-9L);
    if (scaled > 9.2e18L) return std::nullopt;
    return static_cast<std::int64_t>(scaled);
}

}  // namespace

std::optional<std::int64_t> parse_millicores(std::string_view text) { return scaled_up(text, 1e-3L); }

std::optional<std::int64_t> parse_quantity_bytes(std::string_view text) { return scaled_up(text, 1.0L); }

}  // namespace launchguard::kubernetes
