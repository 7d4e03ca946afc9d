// A rule's profile parameter (a threshold such as cpu.min_idle_states): its
// key, type, bounds, default and one line of documentation, declared by the
// rule itself beside its RuleInfo (src/rules/). The profile layer knows no
// rule: the readers get the list of parameters from the layer above, as they
// get the rule ids (ProfileRules, profile.h), validate each key through its
// descriptor and keep the values in one generic table, Profile::parameters.
// A rule reads its value back through the same descriptor, typed
// (profile/typed_parameter.h). docs/design/RULES.md, "How to add a threshold".
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <variant>

namespace launchguard {

enum class ParameterKind {
    boolean,       // true or false
    integer,       // whole number within [min_integer, max_integer]
    number,        // decimal number within [min_number, max_number]
    byte_size,     // 1GiB, 512MiB, 4096 (util/size_parser.h)
    choice,        // one of `choices`
    nccl_version,  // "2.27" or "2.27.3"
    group,         // a mapping of `fields`; absent, the rule that reads it stays quiet
};

// A value as a profile holds it: integer -> int64, byte size -> uint64,
// number -> double, choice and NCCL version -> text.
using ParameterValue = std::variant<bool, std::int64_t, std::uint64_t, double, std::string>;
// Every parameter a profile sets or defaults, by key ("cpu.min_idle_states";
// a group's fields under the group's key: "nccl.qps_per_connection.min").
using ParameterValues = std::map<std::string, ParameterValue, std::less<>>;
// A descriptor's default in a form a constexpr object can hold; monostate:
// none, the key stays absent unless the profile sets it.
using ParameterDefault = std::variant<std::monostate, bool, std::int64_t, std::uint64_t, double, std::string_view>;

struct ProfileParameter {
    // "section.name": the profile section it is written under, then its key
    // there. A group's field: the group's key, then the field's name.
    std::string_view key{};
    ParameterKind kind = ParameterKind::boolean;
    std::string_view doc{};  // one line, for `launchguard explain` and docs/rules.md
    ParameterDefault fallback{};
    std::int64_t min_integer = 0;
    std::int64_t max_integer = 0;
    double min_number = 0;
    double max_number = 0;
    std::span<const std::string_view> choices{};
    std::string_view choice_noun{};  // "cpufreq governor": "unknown cpufreq governor 'x'"
    std::span<const ProfileParameter* const> fields{};

    // "cpu" of "cpu.min_idle_states".
    [[nodiscard]] constexpr std::string_view section() const { return key.substr(0, key.find('.')); }
    // "min_idle_states": the key under its section, or a field's under its group.
    [[nodiscard]] constexpr std::string_view name() const { return key.substr(key.rfind('.') + 1); }
};

// What a value of this parameter looks like: "an integer from 0 to 64".
std::string describe_parameter_type(const ProfileParameter& parameter);
// Its default as a profile would write it ("3", "1GiB", "performance"), or
// "none" where it has none.
std::string describe_parameter_default(const ProfileParameter& parameter);
// A value as a profile would write it.
std::string parameter_value_text(const ParameterValue& value);
// The value a parameter takes when the profile does not set it; false when
// it has none.
bool parameter_default_value(const ProfileParameter& parameter, ParameterValue& value);
// Gives every parameter the profile leaves out its default, so that a read
// profile holds every setting (profile_to_json writes them all); a group's
// fields only where the profile gives the group.
void fill_parameter_defaults(std::span<const ProfileParameter* const> parameters, ParameterValues& values);

}  // namespace launchguard
