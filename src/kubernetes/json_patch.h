// RFC 6902 JSON Patch over Boost.JSON: a builder that turns remediation
// steps into the operations the Kubernetes API server applies (creating
// missing arrays and objects with a whole-value `add`, never duplicating a
// volume, mount or variable), and the subset of RFC 6902 launchguard emits
// (add, remove, replace), applied locally to check and to print the result.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <boost/json/array.hpp>
#include <boost/json/value.hpp>

#include "util/error.h"

namespace launchguard::kubernetes {

// The unescaped reference tokens of an RFC 6901 pointer ("" is the whole
// document); nothing when it is not one.
std::optional<std::vector<std::string>> json_pointer_tokens(std::string_view pointer);
// The array index a token names in an array of `size`; "-" (and `size`
// itself) only where `allow_end` (an add appends there).
std::optional<std::size_t> json_pointer_index(const std::string& token, std::size_t size, bool allow_end);

// Applies add/remove/replace with RFC 6901 pointers; an operation that does
// not apply is an error naming it, as the API server would refuse it.
Result<boost::json::value> apply_json_patch(boost::json::value document, const boost::json::array& patch);

// Builds a patch against a working copy of the object, so each operation is
// computed from the state the previous ones left, exactly as the API server
// applies them in order.
class PodPatchBuilder {
public:
    explicit PodPatchBuilder(const boost::json::value& object) : document_(object) {}

    // `container` and `pod` are pointers to a container and to its PodSpec.
    void set_env(const std::string& container, const std::string& name, const std::string& value);
    void unset_env(const std::string& container, const std::string& name);
    void mount_host_file(const std::string& pod, const std::string& container, const std::string& host_path,
                         const std::string& container_path);
    void memory_shm(const std::string& pod, const std::string& container, std::uint64_t bytes);
    void add_capability(const std::string& container, const std::string& capability);

    // The generic steps the launch gate's injection (gate_injection.h) is
    // made of. `pointer` addresses the working copy, which already holds
    // every earlier operation.
    [[nodiscard]] const boost::json::value* at(const std::string& pointer);
    // add (a new member, or an array element at the pointer's index) or replace.
    void add(const std::string& path, boost::json::value value);
    void replace(const std::string& path, boost::json::value value);
    // Appends to the array at parent/key, creating it with the element when absent.
    void append(const std::string& parent, std::string_view key, boost::json::value element);
    // Inserts first in the array at parent/key, creating it when absent.
    void prepend(const std::string& parent, std::string_view key, boost::json::value element);
    // Makes parent/key an object when absent; returns its pointer.
    std::string ensure_object(const std::string& parent, std::string_view key);

    [[nodiscard]] const boost::json::array& patch() const { return patch_; }
    [[nodiscard]] const boost::json::value& patched() const { return document_; }

private:
    boost::json::value* find(const std::string& pointer);
    void emit(std::string_view op, const std::string& path, const boost::json::value* value);
    // Adds `element` at `index` ("-": the end) of the array at parent/key,
    // or the array holding only it when there is none.
    void insert(const std::string& parent, std::string_view key, boost::json::value element, std::string_view index);
    std::string volume_name_for(const std::string& pod, const std::string& stem);

    boost::json::value document_;
    boost::json::array patch_;
};

// "1 GiB" as a Kubernetes quantity: "1Gi", "1536Mi", or plain bytes.
std::string quantity_for_bytes(std::uint64_t bytes);

}  // namespace launchguard::kubernetes
