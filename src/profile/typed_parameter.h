// The typed face of a rule's profile parameter: a rule declares one as a
// constexpr object beside its RuleInfo, lists it in RuleInfo::parameters, and
// reads its value with `.in(profile)`, typed:
//
//   constexpr IntegerParameter<int> kMinIdleStates{
//       "cpu.min_idle_states", 3, 0, 64, "fire when a CPU exposes fewer idle states"};
//   ... const int minimum = kMinIdleStates.in(in.profile);
//
// A profile the readers produced holds every value, defaults included; one
// built in code (Profile{}) holds none, and `.in` answers the default.
#pragma once

#include <array>
#include <optional>

#include "profile/profile.h"

namespace launchguard {

namespace parameter_detail {

// The stored value of `key` as a T, or nullptr where the profile has none.
template <class T>
const T* stored(const Profile& profile, std::string_view key) {
    const ParameterValue* value = profile.parameter(key);
    return value == nullptr ? nullptr : std::get_if<T>(value);
}

// The stored value of `key` as a T, else the descriptor's default.
template <class T, class Default>
T stored_or(const Profile& profile, std::string_view key, const Default& fallback) {
    const T* value = stored<T>(profile, key);
    return value != nullptr ? *value : std::get<T>(fallback);
}

}  // namespace parameter_detail

class BoolParameter : public ProfileParameter {
public:
    constexpr BoolParameter(std::string_view key_name, bool default_value, std::string_view doc_line)
        : ProfileParameter{
              .key = key_name, .kind = ParameterKind::boolean, .doc = doc_line, .fallback = default_value} {}
    [[nodiscard]] bool in(const Profile& profile) const {
        return parameter_detail::stored_or<bool>(profile, key, fallback);
    }
};

// A whole number within [min, max], read as T (int, std::uint64_t...).
template <class T>
class IntegerParameter : public ProfileParameter {
public:
    constexpr IntegerParameter(std::string_view key_name, T default_value, T min, T max, std::string_view doc_line)
        : ProfileParameter{.key = key_name,
                           .kind = ParameterKind::integer,
                           .doc = doc_line,
                           .fallback = static_cast<std::int64_t>(default_value),
                           .min_integer = static_cast<std::int64_t>(min),
                           .max_integer = static_cast<std::int64_t>(max)} {}
    [[nodiscard]] T in(const Profile& profile) const {
        return static_cast<T>(parameter_detail::stored_or<std::int64_t>(profile, key, fallback));
    }
};

class NumberParameter : public ProfileParameter {
public:
    constexpr NumberParameter(std::string_view key_name, double default_value, double min, double max,
                              std::string_view doc_line)
        : ProfileParameter{.key = key_name,
                           .kind = ParameterKind::number,
                           .doc = doc_line,
                           .fallback = default_value,
                           .min_number = min,
                           .max_number = max} {}
    [[nodiscard]] double in(const Profile& profile) const {
        return parameter_detail::stored_or<double>(profile, key, fallback);
    }
};

// A size in bytes, written as 1GiB, 512MiB or 4096.
class ByteSizeParameter : public ProfileParameter {
public:
    constexpr ByteSizeParameter(std::string_view key_name, std::uint64_t default_value, std::string_view doc_line)
        : ProfileParameter{
              .key = key_name, .kind = ParameterKind::byte_size, .doc = doc_line, .fallback = default_value} {}
    [[nodiscard]] std::uint64_t in(const Profile& profile) const {
        return parameter_detail::stored_or<std::uint64_t>(profile, key, fallback);
    }
};

// One of a fixed set of words; `noun` names what they are in errors
// ("unknown cpufreq governor 'x'").
class ChoiceParameter : public ProfileParameter {
public:
    constexpr ChoiceParameter(std::string_view key_name, std::string_view default_value,
                              std::span<const std::string_view> words, std::string_view noun, std::string_view doc_line)
        : ProfileParameter{.key = key_name,
                           .kind = ParameterKind::choice,
                           .doc = doc_line,
                           .fallback = default_value,
                           .choices = words,
                           .choice_noun = noun} {}
    [[nodiscard]] std::string_view in(const Profile& profile) const {
        const std::string* v = parameter_detail::stored<std::string>(profile, key);
        return v != nullptr ? std::string_view(*v) : std::get<std::string_view>(fallback);
    }
};

// An NCCL version ("2.27" or "2.27.3") with no default: absent, the rule
// that reads it stays quiet.
class NcclVersionParameter : public ProfileParameter {
public:
    constexpr NcclVersionParameter(std::string_view key_name, std::string_view doc_line)
        : ProfileParameter{.key = key_name, .kind = ParameterKind::nccl_version, .doc = doc_line} {}
    [[nodiscard]] std::optional<std::string_view> in(const Profile& profile) const {
        const std::string* v = parameter_detail::stored<std::string>(profile, key);
        if (v == nullptr) return std::nullopt;
        return std::string_view(*v);
    }
};

// A mapping of fields, each a parameter of its own whose key is the group's
// key and its name ("nccl.qps_per_connection.min"), each with a default.
// `.in` says whether the profile gives the group at all: absent, the rule
// stays quiet; given, every field has a value (its own or its default).
class ParameterGroup : public ProfileParameter {
public:
    constexpr ParameterGroup(std::string_view key_name, std::span<const ProfileParameter* const> members,
                             std::string_view doc_line)
        : ProfileParameter{.key = key_name, .kind = ParameterKind::group, .doc = doc_line, .fields = members} {}
    [[nodiscard]] bool in(const Profile& profile) const {
        for (const ProfileParameter* field : fields) {
            if (profile.parameter(field->key) != nullptr) return true;
        }
        return false;
    }
};

// The list a RuleInfo (or a group) points at: parameter_list(kA, kB).
template <class... Parameters>
constexpr std::array<const ProfileParameter*, sizeof...(Parameters)> parameter_list(const Parameters&... parameters) {
    return {&parameters...};
}

}  // namespace launchguard
