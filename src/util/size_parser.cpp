#include "util/size_parser.h"

#include <array>
#include <charconv>
#include <utility>

namespace launchguard {
namespace {

constexpr std::array<std::pair<std::string_view, std::uint64_t>, 12> kUnits{{
    {"KiB", 1ULL << 10},
    {"MiB", 1ULL << 20},
    {"GiB", 1ULL << 30},
    {"TiB", 1ULL << 40},
    {"Ki", 1ULL << 10},
    {"Mi", 1ULL << 20},
    {"Gi", 1ULL << 30},
    {"Ti", 1ULL << 40},
    {"K", 1ULL << 10},
    {"M", 1ULL << 20},
    {"G", 1ULL << 30},
    {"B", 1},
}};

}  // namespace

Result<std::uint64_t> parse_byte_size(std::string_view text) {
    std::uint64_t number = 0;
    auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), number);
    if (ec != std::errc() || ptr == text.data()) {
        return make_error("expected a size such as 1GiB, 512MiB or 4096, got '" + std::string(text) + "'");
    }
    std::string_view unit(ptr, static_cast<std::size_t>(text.data() + text.size() - ptr));
    if (unit.empty()) return number;
    for (const auto& [name, factor] : kUnits) {
        if (unit == name) {
            if (number > UINT64_MAX / factor) return make_error("size '" + std::string(text) + "' is too large");
            return number * factor;
        }
    }
    return make_error("unknown size unit '" + std::string(unit) + "' in '" + std::string(text) +
                      "' (use KiB, MiB, GiB or TiB)");
}

std::string format_byte_size(std::uint64_t bytes) {
    constexpr std::array<std::pair<std::string_view, std::uint64_t>, 4> kShown{
        {{"TiB", 1ULL << 40}, {"GiB", 1ULL << 30}, {"MiB", 1ULL << 20}, {"KiB", 1ULL << 10}}};
    for (const auto& [name, factor] : kShown) {
        if (bytes >= factor && bytes % factor == 0) return std::to_string(bytes / factor) + " " + std::string(name);
    }
    return std::to_string(bytes) + " bytes";
}

}  // namespace launchguard
