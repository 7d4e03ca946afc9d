// The profile schema, once, for every document format a profile comes in:
// YAML as people write it (profile_parser.cpp) and JSON, the compiled form
// that the Slurm task checks read without a YAML library (profile_json.cpp).
// Both read through the same checks, so a profile means the same thing, and
// is refused with the same message, whichever form it is in.
// The node facts have readers here; the rules' thresholds are read through
// the descriptors the rules declare (ProfileRules, read_parameters), so a
// new threshold needs nothing in this file.
//
// `Node` is a format's view of one document node:
//   explicit operator bool() const      the node exists (a missing key: false)
//   bool is_null(), is_scalar(), is_map(), is_sequence() const
//   std::string scalar() const          a scalar's text ("8", "true", "1GiB")
//   int line() const                    1-based; 0 where the format has none
//   std::size_t size() const; Node item(std::size_t) const      sequences
//   std::vector<std::pair<Node, Node>> entries() const          maps, in order
#pragma once

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <map>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "profile/profile.h"
#include "profile/profile_parameter.h"
#include "util/size_parser.h"
#include "util/text_escape.h"

namespace launchguard::profile_schema {

inline constexpr std::uint64_t kMinPageSize = 4U << 10;
inline constexpr std::uint64_t kMaxPageSize = 64U << 10;
// "2.27" or "2.27.3": the NCCL versions a profile may name (nccl.min_version).
inline bool valid_nccl_version(std::string_view text) {
    int dots = 0;
    bool digit_before = false;
    for (char c : text) {
        if (c == '.') {
            if (!digit_before) return false;
            ++dots;
            digit_before = false;
        } else if (std::isdigit(static_cast<unsigned char>(c)) != 0) {
            digit_before = true;
        } else {
            return false;
        }
    }
    return digit_before && (dots == 1 || dots == 2);
}

// Thrown inside the readers only; each parser turns it into an Error.
struct SchemaError {
    int line;
    std::string field;
    std::string message;

    // The error a parser returns: the file, the line and the field.
    [[nodiscard]] Error in(const std::string& origin) const {
        Error error = make_file_error(origin, line, message);
        error.field = field;
        return error;
    }
};

// "a list", "a mapping", "an empty value": what was found where a value of
// another kind was expected.
template <class Node>
std::string kind_of(const Node& node) {
    if (node.is_sequence()) return "a list";
    if (node.is_map()) return "a mapping";
    if (node.is_null()) return "an empty value";
    return "'" + node.scalar() + "'";
}

// A mapping's key and value nodes, in document order.
template <class Node>
using Entries = std::vector<std::pair<Node, Node>>;

// YAML keeps duplicate keys and answers lookups with the first (and a JSON
// object may repeat a key too), so a second `node:` block would never be
// validated or used: refuse it, naming both lines. Keys must be plain strings.
template <class Node>
void reject_duplicate_keys(const Entries<Node>& entries, const std::string& path) {
    std::map<std::string, int> first_line;
    for (const auto& [key_node, value] : entries) {
        const int line = key_node.line();
        if (!key_node.is_scalar()) {
            throw SchemaError{line, path, "keys must be plain strings, got " + kind_of(key_node)};
        }
        const std::string key = key_node.scalar();
        auto [it, inserted] = first_line.emplace(key, line);
        if (!inserted) {
            const std::string where = it->second > 0 ? "first at line " + std::to_string(it->second) : "given twice";
            throw SchemaError{line, path.empty() ? key : path + "." + key, "duplicate key (" + where + ")"};
        }
    }
}

// A mapping whose keys must all be consumed; leftovers are schema errors.
// Its entries are listed once: every take() looks through them.
template <class Node>
class StrictMap {
public:
    StrictMap(const Node& node, std::string path) : path_(std::move(path)) {
        if (!node.is_map()) throw SchemaError{node.line(), path_, "expected a mapping, got " + kind_of(node)};
        entries_ = node.entries();
        reject_duplicate_keys(entries_, path_);
    }

    // The value under `key`, or a node that does not exist when the key is
    // absent. A key written with no value is an error at the key's own line
    // (YAML marks an empty value where the next token starts).
    [[nodiscard]] Node take(const std::string& key) {
        allowed_.insert(key);
        for (const auto& [key_node, value] : entries_) {
            if (key_node.scalar() != key) continue;
            if (value.is_null()) throw SchemaError{key_node.line(), child_path(key), "has no value"};
            return value;
        }
        return Node();
    }

    [[nodiscard]] std::string child_path(const std::string& key) const {
        return path_.empty() ? key : path_ + "." + key;
    }

    void reject_unknown_keys() const {
        for (const auto& [key_node, value] : entries_) {
            const std::string key = key_node.scalar();
            if (allowed_.count(key) == 0) {
                std::string known;
                for (const auto& k : allowed_) known += (known.empty() ? "" : ", ") + k;
                throw SchemaError{key_node.line(), child_path(key), "unknown key (known keys: " + known + ")"};
            }
        }
    }

private:
    Entries<Node> entries_;
    std::string path_;
    std::set<std::string> allowed_;
};

// `expected` names what the caller wants, so an integer key given a list
// says "expected an integer, got a list".
// Text, valid UTF-8: profile strings reach JSON reports and the compiled
// form, and yaml-cpp passes any bytes through.
template <class Node>
std::string scalar(const Node& node, const std::string& path, const char* expected = "a string") {
    if (!node.is_scalar())
        throw SchemaError{node.line(), path, std::string("expected ") + expected + ", got " + kind_of(node)};
    std::string text = node.scalar();
    if (valid_utf8(text) != text) throw SchemaError{node.line(), path, "is not valid UTF-8 text"};
    return text;
}

template <class Node>
bool boolean(const Node& node, const std::string& path) {
    std::string s = scalar(node, path, "true or false");
    if (s == "true") return true;
    if (s == "false") return false;
    throw SchemaError{node.line(), path, "expected true or false, got '" + s + "'"};
}

template <class Node>
long long integer(const Node& node, const std::string& path, long long min, long long max) {
    std::string s = scalar(node, path, "an integer");
    long long v = 0;
    auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    const std::string range = "[" + std::to_string(min) + ", " + std::to_string(max) + "]";
    if (ec == std::errc::result_out_of_range)
        throw SchemaError{node.line(), path, "value " + s + " out of range " + range};
    if (ec != std::errc() || ptr != s.data() + s.size()) {
        throw SchemaError{node.line(), path, "expected an integer, got '" + s + "'"};
    }
    if (v < min || v > max) throw SchemaError{node.line(), path, "value " + s + " out of range " + range};
    return v;
}

template <class Node>
double number(const Node& node, const std::string& path, double min, double max) {
    std::string s = scalar(node, path, "a number");
    double v = 0;
    auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc() || ptr != s.data() + s.size() || !std::isfinite(v)) {
        throw SchemaError{node.line(), path, "expected a number, got '" + s + "'"};
    }
    if (v < min || v > max) throw SchemaError{node.line(), path, "value " + s + " out of range"};
    return v;
}

template <class Node>
std::vector<std::string> string_list(const Node& node, const std::string& path) {
    if (!node.is_sequence()) throw SchemaError{node.line(), path, "expected a list of strings, got " + kind_of(node)};
    std::vector<std::string> out;
    for (std::size_t i = 0; i < node.size(); ++i)
        out.push_back(scalar(node.item(i), path + "[" + std::to_string(i) + "]"));
    return out;
}

template <class Node>
std::uint64_t byte_size(const Node& node, const std::string& path) {
    std::string s = scalar(node, path, "a size such as 1GiB");
    auto parsed = parse_byte_size(s);
    if (!parsed) throw SchemaError{node.line(), path, parsed.error().message};
    return *parsed;
}

template <class Node>
void read_node(StrictMap<Node>& m, Profile::Node& node) {
    if (auto v = m.take("arch")) {
        std::string arch = scalar(v, m.child_path("arch"));
        if (arch != "x86_64" && arch != "aarch64") {
            throw SchemaError{v.line(), m.child_path("arch"), "expected x86_64 or aarch64, got '" + arch + "'"};
        }
        node.arch = arch;
    }
    if (auto v = m.take("virtual_machine")) node.virtual_machine = boolean(v, m.child_path("virtual_machine"));
    if (auto v = m.take("grace")) node.grace = boolean(v, m.child_path("grace"));
    if (auto v = m.take("mnnvl")) node.mnnvl = boolean(v, m.child_path("mnnvl"));
    if (auto v = m.take("nvswitch")) node.nvswitch = boolean(v, m.child_path("nvswitch"));
    if (auto v = m.take("gpus")) node.gpus = static_cast<int>(integer(v, m.child_path("gpus"), 0, 1024));
    if (auto v = m.take("rdma_nics")) node.rdma_nics = static_cast<int>(integer(v, m.child_path("rdma_nics"), 0, 1024));
    if (auto v = m.take("active_ib_ports")) {
        node.active_ib_ports = static_cast<int>(integer(v, m.child_path("active_ib_ports"), 0, 4096));
    }
    if (auto v = m.take("ib_rate_gbps")) node.ib_rate_gbps = number(v, m.child_path("ib_rate_gbps"), 0, 1e6);
    if (auto v = m.take("page_size")) {
        auto bytes = byte_size(v, m.child_path("page_size"));
        if (bytes == 0 || (bytes & (bytes - 1)) != 0) {
            throw SchemaError{v.line(), m.child_path("page_size"), "page size must be a power of two"};
        }
        // The base page sizes Linux has: 4 KiB (x86_64), 16 KiB and 64 KiB (aarch64).
        if (bytes < kMinPageSize || bytes > kMaxPageSize) {
            throw SchemaError{v.line(), m.child_path("page_size"),
                              "page size must be between 4KiB and 64KiB, got '" + v.scalar() + "'"};
        }
        node.page_size = static_cast<long>(bytes);
    }
    if (auto v = m.take("hcas")) node.hcas = string_list(v, m.child_path("hcas"));
    if (auto v = m.take("gpudirect_rdma")) node.gpudirect_rdma = boolean(v, m.child_path("gpudirect_rdma"));
    if (auto v = m.take("cpu_manager_policy")) {
        std::string policy = scalar(v, m.child_path("cpu_manager_policy"));
        if (policy != "none" && policy != "static") {
            throw SchemaError{v.line(), m.child_path("cpu_manager_policy"),
                              "expected none or static (the kubelet's --cpu-manager-policy), got '" + policy + "'"};
        }
        node.cpu_manager_policy = policy;
    }
    if (auto v = m.take("runtime_memlock")) {
        std::string text = scalar(v, m.child_path("runtime_memlock"), "unlimited or a size such as 64KiB");
        if (text == "unlimited" || text == "infinity") {
            node.runtime_memlock.emplace(std::nullopt);
        } else {
            node.runtime_memlock.emplace(byte_size(v, m.child_path("runtime_memlock")));
        }
    }
}

template <class Node>
void read_topology(StrictMap<Node>& m, Profile::Topology& topo) {
    Node required = m.take("required");
    if (required) topo.required = boolean(required, m.child_path("required"));
    for (const char* key : {"host_path", "container_path"}) {
        Node v = m.take(key);
        if (!v) continue;
        std::string path = scalar(v, m.child_path(key));
        if (path.empty() || path.front() != '/') {
            throw SchemaError{v.line(), m.child_path(key), "must be an absolute path, got '" + path + "'"};
        }
        (std::string_view(key) == "host_path" ? topo.host_path : topo.container_path) = path;
    }
    if (topo.container_path.empty()) topo.container_path = topo.host_path;
    if (topo.required && topo.host_path.empty()) {
        throw SchemaError{required.line(), m.child_path("host_path"), "required when topology.required is true"};
    }
}

template <class Node>
void read_nccl(StrictMap<Node>& m, Profile::Nccl& nccl) {
    if (auto v = m.take("net")) nccl.net = scalar(v, m.child_path("net"));
    if (auto v = m.take("net_plugin")) nccl.net_plugin = scalar(v, m.child_path("net_plugin"));
    if (auto v = m.take("ib_hca")) nccl.ib_hca = scalar(v, m.child_path("ib_hca"));
}

inline bool valid_rule_id(const std::string& id) {
    auto dot = id.find('.');
    if (dot == std::string::npos || dot == 0 || dot + 1 == id.size()) return false;
    return std::all_of(id.begin(), id.end(), [](char c) {
        return std::islower(static_cast<unsigned char>(c)) || std::isdigit(static_cast<unsigned char>(c)) || c == '.' ||
               c == '-';
    });
}

// A rule parameter's value, through its descriptor (profile/profile_parameter.h).
template <class Node>
ParameterValue parameter_value(const Node& v, const ProfileParameter& parameter, const std::string& path) {
    switch (parameter.kind) {
        case ParameterKind::boolean:
            return boolean(v, path);
        case ParameterKind::integer:
            return static_cast<std::int64_t>(integer(v, path, parameter.min_integer, parameter.max_integer));
        case ParameterKind::number:
            return number(v, path, parameter.min_number, parameter.max_number);
        case ParameterKind::byte_size:
            return byte_size(v, path);
        case ParameterKind::choice: {
            std::string text = scalar(v, path);
            // A misspelt word would flag every node that has the right one.
            if (std::find(parameter.choices.begin(), parameter.choices.end(), text) == parameter.choices.end()) {
                std::string known;
                for (std::string_view choice : parameter.choices)
                    known += (known.empty() ? "" : ", ") + std::string(choice);
                throw SchemaError{
                    v.line(), path,
                    "unknown " + std::string(parameter.choice_noun) + " '" + text + "' (known: " + known + ")"};
            }
            return text;
        }
        case ParameterKind::nccl_version: {
            std::string text = scalar(v, path, "a version such as 2.27.3");
            if (!valid_nccl_version(text)) {
                throw SchemaError{v.line(), path, "expected a version such as 2.27 or 2.27.3, got '" + text + "'"};
            }
            return text;
        }
        case ParameterKind::group:
            break;
    }
    throw SchemaError{v.line(), path, "cannot be read here"};
}

// The parameters of `section` that the mapping gives, into `values`; their
// keys become known keys of the mapping. A group is a mapping of its own.
template <class Node>
void read_parameters(StrictMap<Node>& m, std::string_view section, std::span<const ProfileParameter* const> parameters,
                     ParameterValues& values) {
    for (const ProfileParameter* parameter : parameters) {
        if (parameter->section() != section) continue;
        const std::string name(parameter->name());
        Node v = m.take(name);
        if (!v) continue;
        if (parameter->kind != ParameterKind::group) {
            values[std::string(parameter->key)] = parameter_value(v, *parameter, m.child_path(name));
            continue;
        }
        StrictMap<Node> group(v, m.child_path(name));
        for (const ProfileParameter* field : parameter->fields) {
            const std::string field_name(field->name());
            if (Node x = group.take(field_name)) {
                values[std::string(field->key)] = parameter_value(x, *field, group.child_path(field_name));
            }
        }
        group.reject_unknown_keys();
        // Given, even as `{}`: every field takes its default.
        fill_parameter_defaults(parameter->fields, values);
    }
}

// A section with fields of the profile's own (node, topology, nccl) that rule
// parameters may join.
template <class Node, class Section>
void read_section(StrictMap<Node>& top, const char* key, Section& section, void (*reader)(StrictMap<Node>&, Section&),
                  const ProfileRules& rules, ParameterValues& values) {
    if (auto v = top.take(key)) {
        StrictMap<Node> m(v, key);
        reader(m, section);
        read_parameters(m, key, rules.parameters, values);
        m.reject_unknown_keys();
    }
}

// The whole document. `root` exists and is not null (the parsers say
// "profile is empty" themselves).
template <class Node>
Profile read_profile(const Node& root, const ProfileRules& rules) {
    Profile profile;
    StrictMap<Node> top(root, "");
    auto name = top.take("name");
    if (!name) throw SchemaError{root.line(), "name", "missing (every profile needs a name)"};
    profile.name = scalar(name, "name");
    if (auto v = top.take("description")) profile.description = scalar(v, "description");
    read_section(top, "node", profile.node, &read_node<Node>, rules, profile.parameters);
    read_section(top, "topology", profile.topology, &read_topology<Node>, rules, profile.parameters);
    read_section(top, "nccl", profile.nccl, &read_nccl<Node>, rules, profile.parameters);
    // Sections of rule parameters alone (cpu, container, virtualization):
    // what the rules declare, a new one included.
    std::set<std::string_view> sections;
    for (const ProfileParameter* parameter : rules.parameters) sections.insert(parameter->section());
    for (std::string_view section : {"node", "topology", "nccl"}) sections.erase(section);
    for (std::string_view section : sections) {
        const std::string key(section);
        if (auto v = top.take(key)) {
            StrictMap<Node> m(v, key);
            read_parameters(m, section, rules.parameters, profile.parameters);
            m.reject_unknown_keys();
        }
    }
    if (auto actions = top.take("rules")) {
        if (!actions.is_map()) throw SchemaError{actions.line(), "rules", "expected a mapping of rule id to action"};
        const Entries<Node> entries = actions.entries();
        reject_duplicate_keys(entries, "rules");
        for (const auto& [key_node, value] : entries) {
            const std::string id = key_node.scalar();
            std::string path = "rules." + id;
            if (!valid_rule_id(id) || (rules.known_rule && !rules.known_rule(id))) {
                throw SchemaError{key_node.line(), path, "unknown rule id (see `launchguard rules`)"};
            }
            if (value.is_null()) throw SchemaError{key_node.line(), path, "has no value"};
            std::string action_text = scalar(value, path, "block, patch, warn or off");
            auto action = parse_action(action_text);
            if (!action) {
                throw SchemaError{value.line(), path, "expected block, patch, warn or off, got '" + action_text + "'"};
            }
            profile.actions[id] = *action;
        }
    }
    top.reject_unknown_keys();
    fill_parameter_defaults(rules.parameters, profile.parameters);
    return profile;
}

}  // namespace launchguard::profile_schema
