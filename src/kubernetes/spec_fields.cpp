#include "kubernetes/spec_fields.h"

#include <algorithm>
#include <limits>

#include <boost/json/serialize.hpp>

namespace launchguard::kubernetes {
namespace json = boost::json;

std::string field_path(std::string_view parent, std::string_view key) {
    if (parent.empty()) return std::string(key);
    return std::string(parent) + "." + std::string(key);
}

std::string field_path(std::string_view parent, std::size_t index) {
    return std::string(parent) + "[" + std::to_string(index) + "]";
}

namespace {

const json::value* member(const json::object& parent, std::string_view key) {
    const json::value* value = parent.if_contains(key);
    if (value == nullptr || value->is_null()) return nullptr;
    return value;
}

[[noreturn]] void wrong_type(std::string_view where, std::string_view key, std::string_view expected) {
    throw SpecError{field_path(where, key), "expected " + std::string(expected)};
}

}  // namespace

const json::object* object_field(const json::object& parent, std::string_view key, std::string_view where) {
    const json::value* value = member(parent, key);
    if (value == nullptr) return nullptr;
    if (!value->is_object()) wrong_type(where, key, "an object");
    return &value->get_object();
}

const json::array* array_field(const json::object& parent, std::string_view key, std::string_view where) {
    const json::value* value = member(parent, key);
    if (value == nullptr) return nullptr;
    if (!value->is_array()) wrong_type(where, key, "a list");
    return &value->get_array();
}

std::optional<std::string> string_field(const json::object& parent, std::string_view key, std::string_view where) {
    const json::value* value = member(parent, key);
    if (value == nullptr) return std::nullopt;
    if (!value->is_string()) wrong_type(where, key, "a string");
    return std::string(value->get_string());
}

std::optional<std::int64_t> int_field(const json::object& parent, std::string_view key, std::string_view where) {
    const json::value* value = member(parent, key);
    if (value == nullptr) return std::nullopt;
    if (value->is_int64()) return value->get_int64();
    if (value->is_uint64() && value->get_uint64() <= static_cast<std::uint64_t>(INT64_MAX)) {
        return static_cast<std::int64_t>(value->get_uint64());
    }
    wrong_type(where, key, "an integer");
}

std::optional<bool> bool_field(const json::object& parent, std::string_view key, std::string_view where) {
    const json::value* value = member(parent, key);
    if (value == nullptr) return std::nullopt;
    if (!value->is_bool()) wrong_type(where, key, "true or false");
    return value->get_bool();
}

const json::object& object_element(const json::value& element, std::string_view where) {
    if (!element.is_object()) throw SpecError{std::string(where), "expected an object"};
    return element.get_object();
}

void for_each_object(const json::object& parent, std::string_view key, std::string_view where,
                     const std::function<void(const json::object&, const std::string&)>& visit) {
    const json::array* list = array_field(parent, key, where);
    if (list == nullptr) return;
    std::string field = field_path(where, key);
    for (std::size_t i = 0; i < list->size(); ++i) {
        std::string item_field = field_path(field, i);
        visit(object_element((*list)[i], item_field), item_field);
    }
}

std::optional<std::string> scalar_text(const json::object& parent, std::string_view key, std::string_view where) {
    const json::value* value = member(parent, key);
    if (value == nullptr) return std::nullopt;
    if (value->is_string()) return std::string(value->get_string());
    if (value->is_number()) return json::serialize(*value);
    wrong_type(where, key, "a string or a number");
}

std::int64_t saturating_product(std::int64_t a, std::int64_t b) {
    std::int64_t product = 0;
    if (__builtin_mul_overflow(a, b, &product)) return std::numeric_limits<std::int64_t>::max();
    return product;
}

std::int64_t saturating_sum(std::int64_t a, std::int64_t b) {
    std::int64_t sum = 0;
    if (__builtin_add_overflow(a, b, &sum)) return std::numeric_limits<std::int64_t>::max();
    return sum;
}

int saturated_int(std::int64_t count) {
    return static_cast<int>(std::min<std::int64_t>(count, std::numeric_limits<int>::max()));
}

}  // namespace launchguard::kubernetes
