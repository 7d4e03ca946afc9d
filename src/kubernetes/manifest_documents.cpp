#include "kubernetes/manifest_documents.h"

#include "util/yaml_guard.h"

#include <charconv>
#include <cstdlib>
#include <set>
#include <vector>

#include <yaml-cpp/yaml.h>
#include <boost/json/parse.hpp>

namespace launchguard::kubernetes {
namespace json = boost::json;

namespace {

// Plain (unquoted) scalars resolve as YAML 1.1 does in sigs.k8s.io/yaml:
// null, booleans (yes/no/on/off too), integers, floats, else strings.
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

// A YAML 1.1 merge key: a plain `<<` (a quoted "<<" is an ordinary key).
bool is_merge_key(const YAML::Node& key) { return key.IsScalar() && key.Tag() == "?" && key.Scalar() == "<<"; }

json::value to_json(const YAML::Node& node);

// YAML 1.1 merge, as sigs.k8s.io/yaml applies it: `<<: *base` (a mapping)
// or `<<: [*a, *b]` (mappings, earlier ones first) adds the keys the mapping
// does not write itself.
void merge_into(json::object& object, const YAML::Node& merged) {
    auto merge_one = [&](const YAML::Node& source) {
        if (!source.IsMap()) {
            throw YAML::ParserException(source.Mark(), "a merge key (<<) takes a mapping or a list of mappings");
        }
        json::value converted = to_json(source);
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

// The caller has bounded the document's expanded size and depth
// (check_yaml_expansion), so following its aliases here is bounded too.
json::value to_json(const YAML::Node& node) {
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
            for (const auto& item : node) array.push_back(to_json(item));
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
                object[entry.first.Scalar()] = to_json(entry.second);
            }
            // Keys written in the mapping win over merged ones, wherever the
            // merge key stands.
            for (const auto& merged : merges) merge_into(object, merged);
            return object;
        }
    }
    return nullptr;
}

std::string kind_of(const json::value& value) {
    if (!value.is_object()) return "";
    const json::value* kind = value.get_object().if_contains("kind");
    return kind != nullptr && kind->is_string() ? std::string(kind->get_string()) : "";
}

Status add_document(json::value value, const std::string& where, std::size_t document, const std::string& pointer,
                    const std::string& origin, std::vector<ManifestDocument>& out) {
    if (value.is_null()) return Done{};  // an empty document between separators
    auto fail = [&](const std::string& field, const std::string& message) {
        Error e = make_file_error(origin, 0, where + ": " + message);
        e.field = field;
        return Status(e);
    };
    std::string kind = kind_of(value);
    if (kind == "List") {
        const json::value* items = value.get_object().if_contains("items");
        if (items == nullptr || !items->is_array()) return fail("items", "a List needs an items list");
        if (items->get_array().empty()) {
            out.push_back({std::move(value), where, false, document, pointer});
            return Done{};
        }
        for (std::size_t i = 0; i < items->get_array().size(); ++i) {
            auto added = add_document(items->get_array()[i], where + ", items[" + std::to_string(i) + "]", document,
                                      pointer + "/items/" + std::to_string(i), origin, out);
            if (!added) return added;
        }
        return Done{};
    }
    if (kind == "AdmissionReview") {
        const json::value* request = value.get_object().if_contains("request");
        if (request == nullptr || !request->is_object()) return fail("request", "an AdmissionReview needs a request");
        const json::value* object = request->get_object().if_contains("object");
        if (object == nullptr || !object->is_object()) {
            return fail("request.object", "an AdmissionReview needs request.object (the object to admit)");
        }
        out.push_back({*object, where + ", request.object", true, document, pointer});
        return Done{};
    }
    out.push_back({std::move(value), where, false, document, pointer});
    return Done{};
}

}  // namespace

Result<std::vector<ManifestDocument>> read_manifest_documents(std::string_view text, const std::string& origin) {
    std::vector<ManifestDocument> out;
    std::size_t first = text.find_first_not_of(" \t\r\n");
    if (first != std::string_view::npos && (text[first] == '{' || text[first] == '[')) {
        boost::system::error_code ec;
        json::value value = json::parse(text, ec);
        if (!ec) {
            if (value.is_array()) {
                for (std::size_t i = 0; i < value.get_array().size(); ++i) {
                    auto added =
                        add_document(value.get_array()[i], "document " + std::to_string(i + 1), i + 1, "", origin, out);
                    if (!added) return added.error();
                }
            } else {
                auto added = add_document(std::move(value), "document 1", 1, "", origin, out);
                if (!added) return added.error();
            }
            return out;
        }
        // Not JSON after all: YAML flow style reads it below, or says why not.
    }
    if (auto guarded = check_yaml_terminates(text, origin); !guarded) return guarded.error();
    try {
        std::vector<YAML::Node> documents = YAML::LoadAll(std::string(text));
        if (auto bounded = check_yaml_expansion(documents, origin); !bounded) return bounded.error();
        for (std::size_t i = 0; i < documents.size(); ++i) {
            std::string where = "document " + std::to_string(i + 1);
            auto added = add_document(to_json(documents[i]), where, i + 1, "", origin, out);
            if (!added) return added.error();
        }
    } catch (const YAML::Exception& e) {
        return yaml_exception_error(e, origin, "not YAML or JSON");
    }
    return out;
}

}  // namespace launchguard::kubernetes
