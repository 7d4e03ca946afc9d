#include "profile/profile_parameter.h"

#include <charconv>
#include <cmath>

#include "util/size_parser.h"

namespace launchguard {
namespace {

// The shortest text that reads back as the same double: 0.5, 400.5;
// whole numbers as integers (1000000, not 1e+06).
std::string number_text(double value) {
    if (std::trunc(value) == value && std::fabs(value) < 1e15) return std::to_string(static_cast<long long>(value));
    char buffer[32];
    auto [end, ec] = std::to_chars(buffer, buffer + sizeof buffer, value);
    return ec == std::errc() ? std::string(buffer, end) : std::to_string(value);
}

// As a profile writes it: "1GiB", not format_byte_size's "1 GiB".
std::string byte_size_text(std::uint64_t bytes) {
    std::string text = format_byte_size(bytes);
    if (text.ends_with(" bytes")) return text.substr(0, text.size() - 6);
    text.erase(text.find(' '), 1);
    return text;
}

std::string join_words(std::span<const std::string_view> words) {
    std::string out;
    for (std::string_view word : words) out += (out.empty() ? "" : ", ") + std::string(word);
    return out;
}

}  // namespace

std::string describe_parameter_type(const ProfileParameter& parameter) {
    switch (parameter.kind) {
        case ParameterKind::boolean:
            return "true or false";
        case ParameterKind::integer:
            return "an integer from " + std::to_string(parameter.min_integer) + " to " +
                   std::to_string(parameter.max_integer);
        case ParameterKind::number:
            return "a number from " + number_text(parameter.min_number) + " to " + number_text(parameter.max_number);
        case ParameterKind::byte_size:
            return "a size such as 1GiB";
        case ParameterKind::choice:
            return "one of " + join_words(parameter.choices);
        case ParameterKind::nccl_version:
            return "an NCCL version such as 2.27 or 2.27.3";
        case ParameterKind::group: {
            std::string fields;
            for (const ProfileParameter* field : parameter.fields)
                fields += (fields.empty() ? "" : ", ") + std::string(field->name());
            return "a mapping of " + fields;
        }
    }
    return {};
}

std::string parameter_value_text(const ParameterValue& value) {
    return std::visit(
        [](const auto& v) -> std::string {
            using T = std::decay_t<decltype(v)>;
            if constexpr (std::is_same_v<T, bool>) {
                return v ? "true" : "false";
            } else if constexpr (std::is_same_v<T, double>) {
                return number_text(v);
            } else if constexpr (std::is_same_v<T, std::string>) {
                return v;
            } else {
                return std::to_string(v);
            }
        },
        value);
}

bool parameter_default_value(const ProfileParameter& parameter, ParameterValue& value) {
    return std::visit(
        [&value](const auto& v) {
            using T = std::decay_t<decltype(v)>;
            if constexpr (std::is_same_v<T, std::monostate>) {
                return false;
            } else if constexpr (std::is_same_v<T, std::string_view>) {
                value = std::string(v);
                return true;
            } else {
                value = v;
                return true;
            }
        },
        parameter.fallback);
}

std::string describe_parameter_default(const ProfileParameter& parameter) {
    if (parameter.kind == ParameterKind::group) return "absent (the rule stays quiet)";
    ParameterValue value;
    if (!parameter_default_value(parameter, value)) return "absent (the rule stays quiet)";
    if (parameter.kind == ParameterKind::byte_size) return byte_size_text(std::get<std::uint64_t>(value));
    return parameter_value_text(value);
}

void fill_parameter_defaults(std::span<const ProfileParameter* const> parameters, ParameterValues& values) {
    for (const ProfileParameter* parameter : parameters) {
        if (parameter->kind == ParameterKind::group) {
            bool given = false;
            for (const ProfileParameter* field : parameter->fields) given = given || values.contains(field->key);
            if (given) fill_parameter_defaults(parameter->fields, values);
            continue;
        }
        ParameterValue value;
        if (!values.contains(parameter->key) && parameter_default_value(*parameter, value)) {
            values.emplace(std::string(parameter->key), std::move(value));
        }
    }
}

}  // namespace launchguard
