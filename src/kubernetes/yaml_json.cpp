#include "kubernetes/yaml_json.h"

#include <charconv>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include <yaml-cpp/yaml.h>
#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/string.hpp>

namespace launchguard::kubernetes {
namespace json = boost::json;

void DuplicateKeys::add(int line, const std::string& key) {
    if (seen_.emplace(line, key).second) found_.push_back({line, key});
}

// Plain scalars resolve as YAML 1.1 does in sigs.k8s.io/yaml.
json::value plain_scalar(const std::string& text) {
    static const std::set<std::string, std::less<>> kNull = {"", "~", "null", "Null", "NULL"};
    static const std::set<std::string, std::less<>> kTrue = {"y",    "Y",    "yes", "Yes", "YES", "true",
                                                             "True", "TRUE", "on",  "On",  "ON"};
    static const std::set<std::string, std::less<>> kFalse = {"n",     "N",     "no",  "No",  "NO", "false",
                                                              "False", "FALSE", "off", "Off", "OFF"};
    if (kNull.count(text) != 0) return nullptr;
    if (kTrue.count(text) != 0) return true;
    if (kFalse.count(text) != 0) return false;
    std::string_view digits = text;
    bool negative = false;
    if (!digits.empty() && (digits[0] == '-' || digits[0] == '+')) {
        negative = digits[0] == '-';
        digits.remove_prefix(1);
    }
    int base = 10;
    if (digits.starts_with("0x")) {
        base = 16;
        digits.remove_prefix(2);
    } else if (digits.starts_with("0o")) {
        base = 8;
        digits.remove_prefix(2);
    }
    if (!digits.empty()) {
        std::int64_t value = 0;
        auto [ptr, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value, base);
        if (ec == std::errc() && ptr == digits.data() + digits.size()) return negative ? -value : value;
    }
    bool looks_numeric = !text.empty() && text.find_first_not_of("0123456789+-.eE") == std::string::npos &&
                         text.find_first_of("0123456789") != std::string::npos;
    if (looks_numeric) {
        char* end = nullptr;
        double value = std::strtod(text.c_str(), &end);
        if (end != nullptr && *end == '\0') return value;
    }
    return json::string(text);
}

namespace {

// A YAML 1.1 merge key: a plain `<<` (a quoted "<<" is an ordinary key).
bool is_merge_key(const YAML::Node& key) { return key.IsScalar() && key.Tag() == "?" && key.Scalar() == "<<"; }

// YAML 1.1 merge, as sigs.k8s.io/yaml applies it: `<<: *base` (a mapping)
// or `<<: [*a, *b]` (mappings, earlier ones first) adds the keys the mapping
// does not write itself.
void merge_into(json::object& object, const YAML::Node& merged, DuplicateKeys* duplicates) {
    auto merge_one = [&](const YAML::Node& source) {
        if (!source.IsMap()) {
            throw YAML::ParserException(source.Mark(), "a merge key (<<) takes a mapping or a list of mappings");
        }
        json::value converted = yaml_to_json(source, duplicates);
        for (auto& [key, value] : converted.get_object()) {
            if (!object.contains(key)) object.emplace(key, std::move(value));
        }
    };
    if (merged.IsSequence()) {
        for (const auto& source : merged) merge_one(source);
    } else {
        merge_one(merged);
    }
}

}  // namespace

json::value yaml_to_json(const YAML::Node& node, DuplicateKeys* duplicates) {
    switch (node.Type()) {
        case YAML::NodeType::Null:
        case YAML::NodeType::Undefined:
            return nullptr;
        case YAML::NodeType::Scalar:
            // yaml-cpp tags quoted and block scalars "!", plain ones "?".
            if (node.Tag() == "!" || node.Tag() == "tag:yaml.org,2002:str") return json::string(node.Scalar());
            return plain_scalar(node.Scalar());
        case YAML::NodeType::Sequence: {
            json::array array;
            array.reserve(node.size());
            for (const auto& item : node) array.push_back(yaml_to_json(item, duplicates));
            return array;
        }
        case YAML::NodeType::Map: {
            json::object object;
            std::vector<YAML::Node> merges;
            for (const auto& entry : node) {
                if (!entry.first.IsScalar()) {
                    throw YAML::ParserException(entry.first.Mark(), "a mapping key must be a scalar");
                }
                if (is_merge_key(entry.first)) {
                    merges.push_back(entry.second);
                    continue;
                }
                const std::string& key = entry.first.Scalar();
                if (duplicates != nullptr && object.contains(key)) duplicates->add(entry.first.Mark().line + 1, key);
                object[key] = yaml_to_json(entry.second, duplicates);
            }
            // Keys written in the mapping win over merged ones, wherever the
            // merge key stands.
            for (const auto& merged : merges) merge_into(object, merged, duplicates);
            return object;
        }
    }
    return nullptr;
}

}  // namespace launchguard::kubernetes
