// Strict YAML reader for profiles: every key is known, every value has the
// expected type, and every error names the file, the line and the key.
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <cmath>
#include <map>
#include <set>
#include <string_view>

#include "profile/profile.h"
#include "profile/size_parser.h"
#include "util/yaml_guard.h"

namespace launchguard {
namespace {

constexpr std::uint64_t kMinPageSize = 4U << 10;
constexpr std::uint64_t kMaxPageSize = 64U << 10;
// The governors of Linux's cpufreq (drivers/cpufreq, intel_pstate).
constexpr std::array<std::string_view, 6> kGovernors = {"performance", "powersave",    "ondemand",
                                                        "conservative", "schedutil", "userspace"};

// Thrown inside the parser only; parse_profile() turns it into an Error.
struct SchemaError {
    int line;
    std::string field;
    std::string message;
};

int line_of(const YAML::Node& node) { return node.Mark().line >= 0 ? node.Mark().line + 1 : 0; }

// "a list", "a mapping", "an empty value": what was found where a value of
// another kind was expected.
std::string kind_of(const YAML::Node& node) {
    if (node.IsSequence()) return "a list";
    if (node.IsMap()) return "a mapping";
    if (node.IsNull()) return "an empty value";
    return "'" + node.Scalar() + "'";
}

// yaml-cpp keeps duplicate keys and answers lookups with the first, so a
// second `node:` block would never be validated or used: refuse it, naming
// both lines. Keys must be plain strings.
void reject_duplicate_keys(const YAML::Node& map, const std::string& path) {
    std::map<std::string, int> first_line;
    for (const auto& entry : map) {
        const int line = line_of(entry.first);
        if (!entry.first.IsScalar()) {
            throw SchemaError{line, path, "keys must be plain strings, got " + kind_of(entry.first)};
        }
        const std::string& key = entry.first.Scalar();
        auto [it, inserted] = first_line.emplace(key, line);
        if (!inserted) {
            throw SchemaError{line, path.empty() ? key : path + "." + key,
                              "duplicate key (first at line " + std::to_string(it->second) + ")"};
        }
    }
}

// A mapping whose keys must all be consumed; leftovers are schema errors.
class StrictMap {
public:
    StrictMap(const YAML::Node& node, std::string path) : node_(node), path_(std::move(path)) {
        if (!node_.IsMap()) throw SchemaError{line_of(node_), path_, "expected a mapping, got " + kind_of(node_)};
        reject_duplicate_keys(node_, path_);
    }

    // The value under `key`, or an undefined node when the key is absent. A
    // key written with no value is an error at the key's own line (yaml-cpp
    // marks an empty value where the next token starts).
    [[nodiscard]] YAML::Node take(const std::string& key) {
        allowed_.insert(key);
        for (const auto& entry : node_) {
            if (entry.first.Scalar() != key) continue;
            if (entry.second.IsNull()) throw SchemaError{line_of(entry.first), child_path(key), "has no value"};
            return entry.second;
        }
        return node_[key];  // absent: an undefined node
    }

    [[nodiscard]] std::string child_path(const std::string& key) const {
        return path_.empty() ? key : path_ + "." + key;
    }

    void reject_unknown_keys() const {
        for (const auto& entry : node_) {
            const std::string& key = entry.first.Scalar();
            if (allowed_.count(key) == 0) {
                std::string known;
                for (const auto& k : allowed_) known += (known.empty() ? "" : ", ") + k;
                throw SchemaError{line_of(entry.first), child_path(key), "unknown key (known keys: " + known + ")"};
            }
        }
    }

private:
    YAML::Node node_;
    std::string path_;
    std::set<std::string> allowed_;
};

// `expected` names what the caller wants, so an integer key given a list
// says "expected an integer, got a list".
std::string scalar(const YAML::Node& node, const std::string& path, const char* expected = "a string") {
    if (!node.IsScalar()) throw SchemaError{line_of(node), path, std::string("expected ") + expected + ", got " + kind_of(node)};
    return node.Scalar();
}

bool boolean(const YAML::Node& node, const std::string& path) {
    std::string s = scalar(node, path, "true or false");
    if (s == "true") return true;
    if (s == "false") return false;
    throw SchemaError{line_of(node), path, "expected true or false, got '" + s + "'"};
}

long long integer(const YAML::Node& node, const std::string& path, long long min, long long max) {
    std::string s = scalar(node, path, "an integer");
    long long v = 0;
    auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec == std::errc::result_out_of_range) {
        throw SchemaError{line_of(node), path,
                          "value " + s + " out of range [" + std::to_string(min) + ", " + std::to_string(max) + "]"};
    }
    if (ec != std::errc() || ptr != s.data() + s.size()) {
        throw SchemaError{line_of(node), path, "expected an integer, got '" + s + "'"};
    }
    if (v < min || v > max) {
        throw SchemaError{line_of(node), path,
                          "value " + s + " out of range [" + std::to_string(min) + ", " + std::to_string(max) + "]"};
    }
    return v;
}

double number(const YAML::Node& node, const std::string& path, double min, double max) {
    std::string s = scalar(node, path, "a number");
    double v = 0;
    auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc() || ptr != s.data() + s.size() || !std::isfinite(v)) {
        throw SchemaError{line_of(node), path, "expected a number, got '" + s + "'"};
    }
    if (v < min || v > max) throw SchemaError{line_of(node), path, "value " + s + " out of range"};
    return v;
}

std::vector<std::string> string_list(const YAML::Node& node, const std::string& path) {
    if (!node.IsSequence()) throw SchemaError{line_of(node), path, "expected a list of strings, got " + kind_of(node)};
    std::vector<std::string> out;
    for (std::size_t i = 0; i < node.size(); ++i) out.push_back(scalar(node[i], path + "[" + std::to_string(i) + "]"));
    return out;
}

std::uint64_t byte_size(const YAML::Node& node, const std::string& path) {
    std::string s = scalar(node, path, "a size such as 1GiB");
    auto parsed = parse_byte_size(s);
    if (!parsed) throw SchemaError{line_of(node), path, parsed.error().message};
    return *parsed;
}

void read_node(StrictMap& m, Profile::Node& node) {
    if (auto v = m.take("arch")) {
        std::string arch = scalar(v, m.child_path("arch"));
        if (arch != "x86_64" && arch != "aarch64") {
            throw SchemaError{line_of(v), m.child_path("arch"), "expected x86_64 or aarch64, got '" + arch + "'"};
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
            throw SchemaError{line_of(v), m.child_path("page_size"), "page size must be a power of two"};
        }
        // The base page sizes Linux has: 4 KiB (x86_64), 16 KiB and 64 KiB (aarch64).
        if (bytes < kMinPageSize || bytes > kMaxPageSize) {
            throw SchemaError{line_of(v), m.child_path("page_size"),
                              "page size must be between 4KiB and 64KiB, got '" + v.Scalar() + "'"};
        }
        node.page_size = static_cast<long>(bytes);
    }
    if (auto v = m.take("hcas")) node.hcas = string_list(v, m.child_path("hcas"));
    m.reject_unknown_keys();
}

void read_topology(StrictMap& m, Profile::Topology& topo) {
    YAML::Node required = m.take("required");
    if (required) topo.required = boolean(required, m.child_path("required"));
    for (const char* key : {"host_path", "container_path"}) {
        YAML::Node v = m.take(key);
        if (!v) continue;
        std::string path = scalar(v, m.child_path(key));
        if (path.empty() || path.front() != '/') {
            throw SchemaError{line_of(v), m.child_path(key), "must be an absolute path, got '" + path + "'"};
        }
        (std::string_view(key) == "host_path" ? topo.host_path : topo.container_path) = path;
    }
    if (topo.container_path.empty()) topo.container_path = topo.host_path;
    m.reject_unknown_keys();
    if (topo.required && topo.host_path.empty()) {
        throw SchemaError{line_of(required), m.child_path("host_path"), "required when topology.required is true"};
    }
}

void read_nccl(StrictMap& m, Profile::Nccl& nccl) {
    if (auto v = m.take("net")) nccl.net = scalar(v, m.child_path("net"));
    if (auto v = m.take("net_plugin")) nccl.net_plugin = scalar(v, m.child_path("net_plugin"));
    if (auto v = m.take("ib_hca")) nccl.ib_hca = scalar(v, m.child_path("ib_hca"));
    if (auto v = m.take("qps_per_connection")) {
        StrictMap q(v, m.child_path("qps_per_connection"));
        Profile::Nccl::Qps qps;
        if (auto x = q.take("min")) qps.min = static_cast<int>(integer(x, q.child_path("min"), 1, 128));
        if (auto x = q.take("min_total_gpus")) {
            qps.min_total_gpus = static_cast<int>(integer(x, q.child_path("min_total_gpus"), 0, 1 << 24));
        }
        if (auto x = q.take("min_link_gbps")) qps.min_link_gbps = number(x, q.child_path("min_link_gbps"), 0, 1e6);
        q.reject_unknown_keys();
        nccl.qps = qps;
    }
    m.reject_unknown_keys();
}

void read_cpu(StrictMap& m, Profile::Cpu& cpu) {
    if (auto v = m.take("governor")) {
        cpu.governor = scalar(v, m.child_path("governor"));
        // A misspelt governor would flag every node that runs the right one.
        if (std::find(kGovernors.begin(), kGovernors.end(), cpu.governor) == kGovernors.end()) {
            std::string known;
            for (const auto& g : kGovernors) known += (known.empty() ? "" : ", ") + std::string(g);
            throw SchemaError{line_of(v), m.child_path("governor"),
                              "unknown cpufreq governor '" + cpu.governor + "' (Linux has " + known + ")"};
        }
    }
    if (auto v = m.take("min_idle_states")) {
        cpu.min_idle_states = static_cast<int>(integer(v, m.child_path("min_idle_states"), 0, 64));
    }
    if (auto v = m.take("min_affinity_overlap")) {
        cpu.min_affinity_overlap = number(v, m.child_path("min_affinity_overlap"), 0, 1);
    }
    if (auto v = m.take("numa_balancing_allowed")) {
        cpu.numa_balancing_allowed = boolean(v, m.child_path("numa_balancing_allowed"));
    }
    m.reject_unknown_keys();
}

void read_container(StrictMap& m, Profile::Container& c) {
    if (auto v = m.take("shm_min")) c.shm_min_bytes = byte_size(v, m.child_path("shm_min"));
    if (auto v = m.take("memlock_unlimited")) c.memlock_unlimited = boolean(v, m.child_path("memlock_unlimited"));
    m.reject_unknown_keys();
}

void read_virtualization(StrictMap& m, Profile::Virtualization& virt) {
    if (auto v = m.take("require_iommu_passthrough")) {
        virt.require_iommu_passthrough = boolean(v, m.child_path("require_iommu_passthrough"));
    }
    m.reject_unknown_keys();
}

bool valid_rule_id(const std::string& id) {
    auto dot = id.find('.');
    if (dot == std::string::npos || dot == 0 || dot + 1 == id.size()) return false;
    return std::all_of(id.begin(), id.end(), [](char c) {
        return std::islower(static_cast<unsigned char>(c)) || std::isdigit(static_cast<unsigned char>(c)) ||
               c == '.' || c == '-';
    });
}

Profile read_profile(const YAML::Node& root, const KnownRuleCheck& known_rule) {
    Profile profile;
    StrictMap top(root, "");
    auto name = top.take("name");
    if (!name) throw SchemaError{line_of(root), "name", "missing (every profile needs a name)"};
    profile.name = scalar(name, "name");
    if (auto v = top.take("description")) profile.description = scalar(v, "description");
    if (auto v = top.take("node")) {
        StrictMap m(v, "node");
        read_node(m, profile.node);
    }
    if (auto v = top.take("topology")) {
        StrictMap m(v, "topology");
        read_topology(m, profile.topology);
    }
    if (auto v = top.take("nccl")) {
        StrictMap m(v, "nccl");
        read_nccl(m, profile.nccl);
    }
    if (auto v = top.take("cpu")) {
        StrictMap m(v, "cpu");
        read_cpu(m, profile.cpu);
    }
    if (auto v = top.take("container")) {
        StrictMap m(v, "container");
        read_container(m, profile.container);
    }
    if (auto v = top.take("virtualization")) {
        StrictMap m(v, "virtualization");
        read_virtualization(m, profile.virt);
    }
    if (auto rules = top.take("rules")) {
        if (!rules.IsMap()) throw SchemaError{line_of(rules), "rules", "expected a mapping of rule id to action"};
        reject_duplicate_keys(rules, "rules");
        for (const auto& entry : rules) {
            const std::string& id = entry.first.Scalar();
            std::string path = "rules." + id;
            if (!valid_rule_id(id) || (known_rule && !known_rule(id))) {
                throw SchemaError{line_of(entry.first), path, "unknown rule id (see `launchguard rules`)"};
            }
            if (entry.second.IsNull()) throw SchemaError{line_of(entry.first), path, "has no value"};
            std::string action_text = scalar(entry.second, path, "block, patch, warn or off");
            auto action = parse_action(action_text);
            if (!action) {
                throw SchemaError{line_of(entry.second), path,
                                  "expected block, patch, warn or off, got '" + action_text + "'"};
            }
            profile.actions[id] = *action;
        }
    }
    top.reject_unknown_keys();
    return profile;
}

}  // namespace

Result<Profile> parse_profile_with(std::string_view yaml, std::string origin, const KnownRuleCheck& known_rule) {
    // Embedded profiles are ours; a file may come from anyone.
    if (!origin.starts_with("embedded:")) {
        if (auto guarded = check_yaml_terminates(yaml, origin); !guarded) return guarded.error();
    }
    try {
        YAML::Node root = YAML::Load(std::string(yaml));
        if (!root.IsDefined() || root.IsNull()) return make_file_error(origin, 0, "profile is empty");
        Profile profile = read_profile(root, known_rule);
        profile.origin = origin;
        return profile;
    } catch (const SchemaError& e) {
        Error error = make_file_error(origin, e.line, e.message);
        error.field = e.field;
        return error;
    } catch (const YAML::Exception& e) {
        return make_file_error(origin, e.mark.line >= 0 ? e.mark.line + 1 : 0, "invalid YAML: " + e.msg);
    } catch (const std::exception& e) {
        return make_file_error(origin, 0, std::string("cannot read profile: ") + e.what());
    }
}

}  // namespace launchguard
