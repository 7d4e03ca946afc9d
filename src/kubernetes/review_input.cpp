#include "kubernetes/review_input.h"

#include <cstdint>
#include <functional>
#include <string_view>

#include <boost/json/object.hpp>

#include "kubernetes/workload_spec.h"

namespace launchguard::kubernetes {
namespace json = boost::json;
namespace {

constexpr std::string_view kMetadataMaps[] = {"labels", "annotations"};

std::size_t combine(std::size_t seed, std::size_t value) {
    return seed ^ (value + 0x9e3779b97f4a7c15ULL + (seed << 6) + (seed >> 2));
}

// Deep equality without copies (Boost.JSON 1.81's object comparison copies
// every member: it was 30 % of the server's CPU on cache hits). Stricter
// than operator== on numbers (an int64 never equals a double): that can
// only turn a hit into a miss.
bool same_json(const json::value& a, const json::value& b) {
    if (a.kind() != b.kind()) return false;
    switch (a.kind()) {
        case json::kind::object: {
            const json::object& left = a.get_object();
            const json::object& right = b.get_object();
            if (left.size() != right.size()) return false;
            // Members are mostly in the same order (a cached key is a copy of
            // an object as the API server wrote it): try the same position
            // before a lookup, which hashes the key byte by byte.
            auto in_right = right.begin();
            for (const auto& member : left) {
                const json::value* other =
                    in_right->key() == member.key() ? &in_right->value() : right.if_contains(member.key());
                ++in_right;
                if (other == nullptr || !same_json(member.value(), *other)) return false;
            }
            return true;
        }
        case json::kind::array: {
            const json::array& left = a.get_array();
            const json::array& right = b.get_array();
            if (left.size() != right.size()) return false;
            for (std::size_t i = 0; i < left.size(); ++i) {
                if (!same_json(left[i], right[i])) return false;
            }
            return true;
        }
        case json::kind::string:
            return a.get_string() == b.get_string();
        case json::kind::int64:
            return a.get_int64() == b.get_int64();
        case json::kind::uint64:
            return a.get_uint64() == b.get_uint64();
        case json::kind::double_:
            return a.get_double() == b.get_double();
        case json::kind::bool_:
            return a.get_bool() == b.get_bool();
        case json::kind::null:
            return true;
    }
    return false;
}

// A hash that agrees with same_json: equal values hash alike (members in
// any order). Not std::hash<json::value>: Boost.JSON 1.81 hashes every
// string and key one byte at a time (FNV-1a), which made the key's hash
// ~4 % of the server's CPU on a cache hit.
std::size_t json_hash(const json::value& value) {
    std::size_t hash = static_cast<std::size_t>(value.kind());
    switch (value.kind()) {
        case json::kind::object: {
            const json::object& object = value.get_object();
            std::size_t members = object.size();
            for (const auto& member : object) {
                members += combine(std::hash<std::string_view>{}(member.key()), json_hash(member.value()));
            }
            return combine(hash, members);
        }
        case json::kind::array: {
            hash = combine(hash, value.get_array().size());
            for (const json::value& element : value.get_array()) hash = combine(hash, json_hash(element));
            return hash;
        }
        case json::kind::string:
            return combine(hash, std::hash<std::string_view>{}(value.get_string()));
        case json::kind::int64:
            return combine(hash, std::hash<std::int64_t>{}(value.get_int64()));
        case json::kind::uint64:
            return combine(hash, std::hash<std::uint64_t>{}(value.get_uint64()));
        case json::kind::double_:
            return combine(hash, std::hash<double>{}(value.get_double()));
        case json::kind::bool_:
            return combine(hash, value.get_bool() ? 1 : 2);
        case json::kind::null:
            return hash;
    }
    return hash;
}

// metadata.<map>[key] when the review reads it, else null.
const json::value* shape_entry(const json::value& metadata, std::string_view map, std::string_view key) {
    const json::value* entries = metadata.get_object().if_contains(map);
    if (entries == nullptr || !entries->is_object()) return nullptr;
    return entries->get_object().if_contains(key);
}

// Names, uids, managedFields and per-pod labels differ between the pods of
// one Job and decide nothing: of a metadata object only the shape entries
// count.
std::size_t metadata_hash(const json::value& metadata) {
    if (!metadata.is_object()) return json_hash(metadata);
    std::size_t hash = 0;
    for (std::string_view map : kMetadataMaps) {
        for (std::string_view key : kShapeMetadataKeys) {
            if (const json::value* value = shape_entry(metadata, map, key)) {
                hash = combine(hash, combine(std::hash<std::string_view>{}(map),
                                             combine(std::hash<std::string_view>{}(key), json_hash(*value))));
            }
        }
    }
    return hash;
}

bool same_metadata(const json::value& stored, const json::value& live) {
    if (!stored.is_object() || !live.is_object()) return same_json(stored, live);
    for (std::string_view map : kMetadataMaps) {
        for (std::string_view key : kShapeMetadataKeys) {
            const json::value* a = shape_entry(stored, map, key);
            const json::value* b = shape_entry(live, map, key);
            if ((a == nullptr) != (b == nullptr) || (a != nullptr && !same_json(*a, *b))) return false;
        }
    }
    return true;
}

}  // namespace

std::size_t review_input_hash(const json::value& object) {
    if (!object.is_object()) return json_hash(object);
    std::size_t hash = object.get_object().size();
    for (const auto& member : object.get_object()) {
        const std::size_t value_hash =
            member.key() == "metadata" ? metadata_hash(member.value()) : json_hash(member.value());
        hash += combine(std::hash<std::string_view>{}(member.key()), value_hash);  // members are unordered
    }
    return hash;
}

bool same_review_input(const json::value& stored, const json::value& live) {
    if (!stored.is_object() || !live.is_object()) return same_json(stored, live);
    const json::object& kept = stored.get_object();
    if (kept.size() != live.get_object().size()) return false;
    for (const auto& member : live.get_object()) {
        const json::value* other = kept.if_contains(member.key());
        if (other == nullptr) return false;
        bool same =
            member.key() == "metadata" ? same_metadata(*other, member.value()) : same_json(*other, member.value());
        if (!same) return false;
    }
    return true;
}

json::value review_input(const json::value& object) {
    if (!object.is_object()) return object;
    json::object input;
    input.reserve(object.get_object().size());
    for (const auto& member : object.get_object()) {
        if (member.key() != "metadata" || !member.value().is_object()) {
            input.emplace(member.key(), member.value());
            continue;
        }
        json::object metadata;
        for (std::string_view map : kMetadataMaps) {
            json::object entries;
            for (std::string_view key : kShapeMetadataKeys) {
                if (const json::value* value = shape_entry(member.value(), map, key)) entries.emplace(key, *value);
            }
            metadata.emplace(map, std::move(entries));
        }
        input.emplace(member.key(), std::move(metadata));
    }
    return input;
}

}  // namespace launchguard::kubernetes
