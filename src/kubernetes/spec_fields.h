// Typed reads of a Kubernetes object with errors that name the field as a
// user writes it ("spec.template.spec.containers[1].env[0].name"). Inside
// the kubernetes module a malformed field throws SpecError; review_workload
// catches it and returns an Error, so nothing throws past the module.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

namespace launchguard::kubernetes {

struct SpecError {
    std::string field;
    std::string message;
};

// "spec" + "template" -> "spec.template"; "" + "spec" -> "spec".
std::string field_path(std::string_view parent, std::string_view key);
// "spec.containers" + 1 -> "spec.containers[1]".
std::string field_path(std::string_view parent, std::size_t index);

// The object or array `value` holds; nullptr when it is absent or of another type.
inline const boost::json::object* object_of(const boost::json::value* value) {
    return value != nullptr ? value->if_object() : nullptr;
}
inline const boost::json::array* array_of(const boost::json::value* value) {
    return value != nullptr ? value->if_array() : nullptr;
}
inline boost::json::object* object_of(boost::json::value* value) {
    return value != nullptr ? value->if_object() : nullptr;
}
inline boost::json::array* array_of(boost::json::value* value) {
    return value != nullptr ? value->if_array() : nullptr;
}

// Absent or null members read as "not written"; a member of the wrong type
// throws SpecError naming `where`.key.
const boost::json::object* object_field(const boost::json::object& parent, std::string_view key,
                                        std::string_view where);
const boost::json::array* array_field(const boost::json::object& parent, std::string_view key, std::string_view where);
std::optional<std::string> string_field(const boost::json::object& parent, std::string_view key,
                                        std::string_view where);
std::optional<std::int64_t> int_field(const boost::json::object& parent, std::string_view key, std::string_view where);
std::optional<bool> bool_field(const boost::json::object& parent, std::string_view key, std::string_view where);
// An element of an array that must be an object.
const boost::json::object& object_element(const boost::json::value& element, std::string_view where);
// Calls `visit` for each element of the list parent.key, which must be
// objects, with the element's field path ("spec.volumes[2]").
void for_each_object(const boost::json::object& parent, std::string_view key, std::string_view where,
                     const std::function<void(const boost::json::object&, const std::string&)>& visit);
// A string or a number, as Kubernetes accepts for quantities and some ports.
std::optional<std::string> scalar_text(const boost::json::object& parent, std::string_view key, std::string_view where);

// Counts of pods and GPUs that replicas multiply: non-negative, saturated at
// the largest value instead of wrapping (a wrapped total would silence every
// rule that scales with the job), as `launchguard check` does.
std::int64_t saturating_product(std::int64_t a, std::int64_t b);
std::int64_t saturating_sum(std::int64_t a, std::int64_t b);
int saturated_int(std::int64_t count);

}  // namespace launchguard::kubernetes
