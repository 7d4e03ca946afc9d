#include "kubernetes/manifest_documents.h"

#include "util/yaml_guard.h"

#include <charconv>
#include <cstdlib>
#include <set>

#include <boost/json/parse.hpp>
#include <yaml-cpp/yaml.h>

namespace launchguard::kubernetes {
namespace json = boost::json;

namespace {

// Plain (unquoted) scalars resolve as YAML 1.1 does in sigs.k8s.io/yaml:
// null, booleans (yes/no/on/off too), integers, floats, else strings.
json::value plain_scalar(const std::string& text) {
    static const std::set<std::string, std::less<>> kNull = {"", "~", "null", "Null", "NULL"};
    static const std::set<std::string, std::less<>> kTrue = {"y", "Y", "yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON"};
    static const std::set<std::string, std::less<>> kFalse = {"n", "N", "no", "No", "NO", "false", "False", "FALSE", "off", "Off", "OFF"};
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

json::value to_json(const YAML::Node& node, const std::string& origin) {
    switch (node.Type()) {
        case YAML::NodeType::Null:
        case YAML::NodeType::Undefined: return nullptr;
        case YAML::NodeType::Scalar:
            // yaml-cpp tags quoted and block scalars "!", plain ones "?".
            if (node.Tag() == "!" || node.Tag() == "tag:yaml.org,2002:str") return json::string(node.Scalar());
            return plain_scalar(node.Scalar());
        case YAML::NodeType::Sequence: {
            json::array array;
            for (const auto& item : node) array.push_back(to_json(item, origin));
            return array;
        }
        case YAML::NodeType::Map: {
            json::object object;
            for (const auto& entry : node) {
                if (!entry.first.IsScalar()) {
                    throw YAML::ParserException(entry.first.Mark(), "a mapping key must be a scalar");
                }
                object[entry.first.Scalar()] = to_json(entry.second, origin);
            }
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

Status add_document(json::value value, const std::string& where, const std::string& origin,
                    std::vector<ManifestDocument>& out) {
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
        for (std::size_t i = 0; i < items->get_array().size(); ++i) {
            auto added = add_document(items->get_array()[i], where + ", items[" + std::to_string(i) + "]", origin, out);
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
        out.push_back({*object, where + ", request.object", true});
        return Done{};
    }
    out.push_back({std::move(value), where, false});
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
                    auto added = add_document(value.get_array()[i], "document " + std::to_string(i + 1), origin, out);
                    if (!added) return added.error();
                }
            } else {
                auto added = add_document(std::move(value), "document 1", origin, out);
                if (!added) return added.error();
            }
            return out;
        }
        // Not JSON after all: YAML flow style reads it below, or says why not.
    }
    if (auto guarded = check_yaml_terminates(text, origin); !guarded) return guarded.error();
    try {
        std::vector<YAML::Node> documents = YAML::LoadAll(std::string(text));
        for (std::size_t i = 0; i < documents.size(); ++i) {
            std::string where = "document " + std::to_string(i + 1);
            auto added = add_document(to_json(documents[i], origin), where, origin, out);
            if (!added) return added.error();
        }
    } catch (const YAML::Exception& e) {
        return make_file_error(origin, e.mark.line >= 0 ? e.mark.line + 1 : 0, "not YAML or JSON: " + e.msg);
    }
    return out;
}

}  // namespace launchguard::kubernetes
