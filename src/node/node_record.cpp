#include "node/node_record.h"

#include <unistd.h>

#include <algorithm>
#include <boost/json.hpp>
#include <cstdio>
#include <ctime>
#include <set>

#include "nccl/host_topology.h"
#include "nccl/nccl_config.h"
#include "probe/rooted_file_view.h"
#include "probe/sysfs_probe.h"
#include "report/json_report.h"
#include "rules/rule_helpers.h"

namespace launchguard {
namespace json = boost::json;
namespace {

template <typename V>
json::object known(const V& value, const std::string& source) {
    return json::object{{"value", value}, {"source", source}};
}

json::object unknown(const std::string& reason) { return json::object{{"value", nullptr}, {"reason", reason}}; }

template <typename T, typename Convert>
json::object from_fact(const Fact<T>& fact, Convert convert) {
    if (!fact) return unknown(fact.reason());
    return known(json::value(convert(*fact)), fact.source());
}

json::object from_fact(const Fact<std::string>& fact) {
    return from_fact(fact, [](const std::string& v) { return json::value(v); });
}

std::string join(const std::set<std::string>& values, std::string_view separator) {
    return rules::join(std::vector<std::string>(values.begin(), values.end()), separator);
}

// Distinct values of one attribute of every HCA. Unknown when no device's
// reads; a device whose attribute alone did not read counts as "?", so that
// it is not silently dropped from the others' value.
json::object hca_attribute(const Fact<std::vector<NodeIdentity::Hca>>& hcas, std::string NodeIdentity::Hca::*field,
                           std::string_view attribute) {
    if (!hcas) return unknown(hcas.reason());
    std::set<std::string> values;
    bool any = false;
    for (const auto& hca : *hcas) {
        any = any || !(hca.*field).empty();
        values.insert((hca.*field).empty() ? std::string("?") : hca.*field);
    }
    if (!values.empty() && !any)
        return unknown("no RDMA device under " + hcas.source() + " has a readable " + std::string(attribute));
    return known(values.empty() ? "none" : join(values, ", "), hcas.source());
}

// Of the groups that hold a device, their translation types: "identity"
// (pass-through), "DMA", "DMA-FQ"; "off" with no group at all.
json::object iommu_mode(const Fact<std::vector<IommuGroup>>& groups) {
    if (!groups) return unknown(groups.reason());
    std::set<std::string> types;
    for (const auto& group : *groups) {
        if (!group.devices.empty()) types.insert(group.type.empty() ? "?" : group.type);
    }
    return known(types.empty() ? "off" : join(types, ", "), groups.source());
}

json::object governor(const Fact<CpuPower>& power) {
    if (!power) return unknown(power.reason());
    if (power->governor.empty()) return unknown("no scaling_governor under " + power.source());
    std::set<std::string> values;
    for (const auto& [cpu, name] : power->governor) values.insert(name);
    return known(join(values, ", "), power.source());
}

// The enabled idle states, as one set when every CPU has the same (the usual
// case), else each distinct set, separated by " | ".
json::object cstates(const Fact<CpuPower>& power) {
    if (!power) return unknown(power.reason());
    if (power->idle_states.empty()) return unknown("no cpuidle states under " + power.source());
    std::set<std::string> sets;
    for (const auto& [cpu, states] : power->idle_states) {
        std::string enabled;
        for (const auto& state : states) {
            if (state.disabled) continue;
            if (!enabled.empty()) enabled += ' ';
            enabled += state.name;
        }
        sets.insert(enabled.empty() ? "none" : enabled);
    }
    return known(join(sets, " | "), power.source());
}

std::string link_text(const PcieLink& link) {
    char text[48];
    std::snprintf(text, sizeof(text), "%gGT/s x%d", link.speed_gts, link.width);
    return text;
}

// "at maximum" when every GPU and NIC link runs at its maximum, else the
// links that do not, by bus id.
json::object pcie_links(const Fact<NodeTopology>& topology) {
    if (!topology) return unknown(topology.reason());
    std::set<std::string> degraded;
    int measured = 0;
    auto look = [&](const std::string& busid, const PciLinkState& link) {
        if (!link.current || !link.max) return;
        ++measured;
        if (link.current->speed_gts < link.max->speed_gts || link.current->width < link.max->width)
            degraded.insert(busid + " " + link_text(*link.current) + " of " + link_text(*link.max));
    };
    for (const auto& gpu : topology->gpus) look(gpu.busid, gpu.link);
    for (const auto& nic : topology->nics) look(nic.busid, nic.link);
    if (measured == 0) return unknown("no GPU or NIC with a readable current and maximum link");
    return known(degraded.empty() ? "at maximum" : join(degraded, ", "), topology->source + " and sysfs");
}

json::object inventory(const Fact<NodeTopology>& topology, std::size_t (*count)(const NodeTopology&)) {
    if (!topology) return unknown(topology.reason());
    return known(json::value(static_cast<std::int64_t>(count(*topology))), topology->source);
}

// The topology file NCCL would load on this node (nccl/host_topology.h:
// NCCL_TOPO_FILE from the conf files, the nvidia-topologyd default, the
// profile's host path), and the hash of its content.
void topology_file(const FileView& files, const Profile& profile, json::object& facts) {
    const auto config = nccl::resolve(Environment{}, files);
    const auto candidates = nccl::host_topology_candidates(config, profile.topology.host_path, profile.name);
    std::string looked;
    bool all_missing = true;
    for (const auto& candidate : candidates) {
        const FileInfo info = files.stat(candidate.path);
        if (info.kind == FileKind::regular) {
            auto content = files.read(candidate.path);
            if (!content) {
                facts[record_fact::kTopoFile] = known(candidate.path, candidate.origin);
                facts[record_fact::kTopoFileHash] = unknown(content.error().to_string());
                return;
            }
            facts[record_fact::kTopoFile] = known(candidate.path, candidate.origin);
            facts[record_fact::kTopoFileHash] = known(content_hash(*content), candidate.path);
            return;
        }
        if (info.kind != FileKind::missing) all_missing = false;
        if (!looked.empty()) looked += ", ";
        looked += candidate.path + " (" + candidate.origin + ")";
    }
    if (all_missing) {
        const std::string source = looked.empty() ? std::string("no candidate path") : "none of " + looked + " exists";
        facts[record_fact::kTopoFile] = known("none", source);
        facts[record_fact::kTopoFileHash] = known("none", source);
    } else {
        facts[record_fact::kTopoFile] = unknown("cannot tell whether " + looked + " exist");
        facts[record_fact::kTopoFileHash] = unknown("cannot tell whether " + looked + " exist");
    }
}

std::string hostname_of_this_machine() {
    char name[256] = {};
    if (::gethostname(name, sizeof(name) - 1) != 0) return {};
    return name;
}

}  // namespace

std::optional<std::string> fact_value_text(const json::value& value) {
    switch (value.kind()) {
        case json::kind::null:
            return std::nullopt;
        case json::kind::string:
            return std::string(value.as_string());
        case json::kind::bool_:
            return value.as_bool() ? "true" : "false";
        default:
            return json::serialize(value);
    }
}

std::string content_hash(std::string_view bytes) {
    std::uint64_t hash = 0xcbf29ce484222325ULL;
    for (unsigned char c : bytes) {
        hash ^= c;
        hash *= 0x100000001b3ULL;
    }
    char text[32];
    std::snprintf(text, sizeof(text), "fnv1a64:%016llx", static_cast<unsigned long long>(hash));
    return text;
}

std::string utc_timestamp(std::chrono::system_clock::time_point when) {
    const std::time_t t = std::chrono::system_clock::to_time_t(when);
    std::tm tm{};
    ::gmtime_r(&t, &tm);
    char text[32];
    std::strftime(text, sizeof(text), "%Y-%m-%dT%H:%M:%SZ", &tm);
    return text;
}

std::optional<std::string> record_file_name(std::string_view hostname) {
    if (hostname.empty() || hostname == "." || hostname == ".." || hostname.find('/') != std::string_view::npos ||
        hostname.find('\0') != std::string_view::npos)
        return std::nullopt;
    return std::string(hostname) + ".json";
}

NodeRecordFacts collect_node_record_facts(const LaunchContext& ctx, const Profile& profile, const std::string& root) {
    NodeRecordFacts record;
    const NodeIdentity identity = probe_node_identity(root);
    if (identity.hostname)
        record.hostname = *identity.hostname;
    else
        record.hostname_reason = identity.hostname.reason();

    json::object& facts = record.facts;
    facts[record_fact::kKernelRelease] = from_fact(identity.kernel_release);
    facts[record_fact::kKernelCmdline] = from_fact(ctx.node.kernel_cmdline);
    facts[record_fact::kArch] = from_fact(ctx.node.arch);
    facts[record_fact::kVirtualization] = from_fact(ctx.node.virtualization);
    facts[record_fact::kIommuMode] = iommu_mode(ctx.node.iommu_groups);
    facts[record_fact::kGpuDriver] = from_fact(identity.gpu_driver);
    facts[record_fact::kHcaModels] = hca_attribute(identity.hcas, &NodeIdentity::Hca::model, "hca_type or board_id");
    facts[record_fact::kHcaFirmware] = hca_attribute(identity.hcas, &NodeIdentity::Hca::firmware, "fw_ver");
    // Where the context comes to carry a peer-memory fact of its own (for
    // transport rules), the record should take it from there instead.
    facts[record_fact::kPeerMemory] = from_fact(identity.peer_memory);
    facts[record_fact::kGovernor] = governor(ctx.node.power);
    facts[record_fact::kCstates] = cstates(ctx.node.power);
    facts[record_fact::kNumaBalancing] = from_fact(ctx.node.numa_balancing, [](bool on) { return json::value(on); });
    facts[record_fact::kPcieLinks] = pcie_links(ctx.topology);
    facts[record_fact::kGpuCount] = inventory(ctx.topology, [](const NodeTopology& t) { return t.gpus.size(); });
    facts[record_fact::kHcaCount] = inventory(ctx.topology, [](const NodeTopology& t) {
        return static_cast<std::size_t>(
            std::count_if(t.nics.begin(), t.nics.end(), [](const Nic& nic) { return !nic.hca.empty(); }));
    });
    facts[record_fact::kActiveIbPorts] =
        inventory(ctx.topology, [](const NodeTopology& t) { return t.active_ib_port_count(); });
    facts[record_fact::kNumaNodes] = inventory(ctx.topology, [](const NodeTopology& t) { return t.numa_nodes.size(); });
    facts[record_fact::kCpuCount] = inventory(ctx.topology, [](const NodeTopology& t) { return t.all_cpus.count(); });

    // The topology file is looked up where the node facts were read: the
    // node's own files live, the recorded tree otherwise.
    if (root.empty() || root == "/") {
        if (ctx.files) topology_file(*ctx.files, profile, facts);
    } else {
        topology_file(RootedFileView(root, "node tree " + root), profile, facts);
    }
    return record;
}

namespace {

json::object record_head(const NodeRecordHeader& header, json::value hostname, const std::string& hostname_reason,
                         std::string_view health) {
    json::object node{{"hostname", std::move(hostname)}, {"class", header.node_class}};
    if (!hostname_reason.empty()) node["hostname_reason"] = hostname_reason;
    return json::object{{"schema", kNodeRecordSchema},
                        {"node", std::move(node)},
                        {"checked_at", utc_timestamp(header.checked_at)},
                        {"health", health}};
}

}  // namespace

json::object node_record_json(const Report& report, const NodeVerdict& verdict, const NodeRecordFacts& facts,
                              const NodeRecordHeader& header) {
    json::object record = record_head(header, facts.hostname ? json::value(*facts.hostname) : json::value(nullptr),
                                      facts.hostname_reason, to_string(verdict.health));
    json::array rules;
    for (const auto& rule : verdict.rules)
        rules.push_back(json::object{{"rule", rule.rule}, {"outcome", to_string(rule.outcome)}});
    record["rules"] = std::move(rules);
    record["facts"] = facts.facts;
    json::value report_json = report_to_json(report);
    for (auto& [key, value] : report_json.as_object()) record[key] = std::move(value);
    return record;
}

json::object unknown_node_record_json(const std::string& problem, const NodeRecordHeader& header,
                                      std::string hostname) {
    if (hostname.empty()) hostname = hostname_of_this_machine();
    json::object record = record_head(header, hostname.empty() ? json::value(nullptr) : json::value(hostname),
                                      hostname.empty() ? "gethostname failed" : "", "unknown");
    record["problem"] = problem;
    record["rules"] = json::array{};
    record["facts"] = json::object{};
    return record;
}

}  // namespace launchguard
