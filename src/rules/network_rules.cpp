// net.*: does NCCL reach the fabric the node was built with? Most of these
// mistakes are silent: NCCL falls back to TCP sockets or stages through host
// memory and logs it only at INFO (ncclIbInitDevices in NCCL's
// src/transport/net_ib/init.cc, ncclNetInit in src/plugin/net.cc,
// ncclTopoCheckGdr in src/graph/paths.cc).
#include <algorithm>
#include <array>
#include <cctype>
#include <initializer_list>
#include <iterator>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "context/memo_file_view.h"
#include "nccl/device_filter.h"
#include "nccl/library_search.h"
#include "rules/families.h"
#include "rules/rule_helpers.h"
#include "rules/table_rule.h"
#include "util/text.h"

namespace launchguard {
namespace {

using rules::add_setting_evidence;
using rules::all_hold;
using rules::Condition;
using rules::effective_int;
using rules::format_number;
using rules::join;
using rules::restore_default;
using rules::setting_or_unknown;

constexpr std::string_view kActiveState = "ACTIVE";
constexpr std::string_view kDefaultNet = "IB";
constexpr long long kDefaultQpsPerConnection = 1;
// The files NCCL's ncclIbGdrSupport takes as "peer memory is there" (src/transport/net_ib/gdr.cc).
constexpr std::array kPeerMemoryFiles = std::to_array<std::string_view>({
    "/sys/kernel/mm/memory_peers/nv_mem/version",
    "/sys/kernel/mm/memory_peers/nv_mem_nc/version",
    "/sys/module/nvidia_peermem/version",
});  // NCCL_PARAM(IbQpsPerConn, ...), net_ib/connect.cc

// ---------------------------------------------------------------------------
// The node's RDMA ports and the job's shape.

std::string port_name(const Nic& nic, const IbPort& port) { return nic.hca + ":" + std::to_string(port.number); }

bool is_active(const IbPort& port) { return port.state == kActiveState; }

std::vector<std::string> active_ports(const NodeTopology& topo) {
    std::vector<std::string> names;
    for (const auto& nic : topo.nics) {
        if (nic.hca.empty()) continue;
        for (const auto& port : nic.ports) {
            if (is_active(port)) names.push_back(port_name(nic, port));
        }
    }
    return names;
}

std::vector<std::string> active_hcas(const NodeTopology& topo) {
    std::vector<std::string> names;
    for (const auto& nic : topo.nics) {
        if (nic.hca.empty()) continue;
        if (std::any_of(nic.ports.begin(), nic.ports.end(), is_active)) names.push_back(nic.hca);
    }
    return names;
}

// Does this node carry an InfiniBand/RoCE fabric NCCL should use? Its own
// active ports say yes; otherwise the profile's inventory does.
Condition node_has_rdma(const RuleInput& in) {
    const auto& node = in.profile.node;
    if (in.ctx.topology && in.ctx.topology->active_ib_port_count() > 0) return Condition::known(true);
    if (node.active_ib_ports.value_or(0) > 0 || node.rdma_nics.value_or(0) > 0) return Condition::known(true);
    // A pod handed RDMA devices (rdma/ib, nvidia.com/hostdev) runs where they exist.
    if (in.ctx.container.rdma_devices && !in.ctx.container.rdma_devices->empty()) return Condition::known(true);
    if (in.ctx.topology) return Condition::known(false);
    return Condition::unknown("the node topology is unknown (" + in.ctx.topology.reason() + ") and profile '" +
                              in.profile.name + "' declares no RDMA NICs");
}

Condition multi_node_job(const LaunchContext& ctx) {
    if (ctx.job.nodes) return Condition::known(*ctx.job.nodes > 1);
    return Condition::unknown("the job's node count is unknown: " + ctx.job.nodes.reason());
}

void add_rdma_evidence(Finding& finding, const RuleInput& in) {
    if (in.ctx.topology && in.ctx.topology->active_ib_port_count() > 0) {
        finding.evidence.emplace_back("active_ib_ports", join(active_ports(*in.ctx.topology)));
        finding.evidence.emplace_back("topology", in.ctx.topology->source);
    } else if (in.profile.node.active_ib_ports) {
        finding.evidence.emplace_back("profile_active_ib_ports", std::to_string(*in.profile.node.active_ib_ports));
    } else if (in.profile.node.rdma_nics) {
        finding.evidence.emplace_back("profile_rdma_nics", std::to_string(*in.profile.node.rdma_nics));
    } else if (in.ctx.container.rdma_devices && !in.ctx.container.rdma_devices->empty()) {
        finding.evidence.emplace_back("rdma_devices", join(*in.ctx.container.rdma_devices));
    }
}

std::string rdma_description(const RuleInput& in) {
    if (in.ctx.topology && in.ctx.topology->active_ib_port_count() > 0) {
        std::size_t count = in.ctx.topology->active_ib_port_count();
        return "a node with " + std::to_string(count) + " active IB/RoCE port" + (count == 1 ? "" : "s");
    }
    const auto& node = in.profile.node;
    if (node.active_ib_ports.value_or(0) == 0 && node.rdma_nics.value_or(0) == 0 && in.ctx.container.rdma_devices &&
        !in.ctx.container.rdma_devices->empty()) {
        return "a node whose RDMA devices the container is given (" + join(*in.ctx.container.rdma_devices) + ")";
    }
    return "a node that profile '" + in.profile.name + "' gives an IB/RoCE fabric";
}

// ---------------------------------------------------------------------------
// Net plugins: where the container's dynamic loader would find them.

// Where net plugins are installed but dlopen does not look unless
// LD_LIBRARY_PATH says so: HPC-X's SHARP plugin, the hostPath GKE's TCPX,
// TCPXO and gIB pods mount, and the aws-ofi-nccl package of EFA images.
constexpr std::array kPluginInstallDirs = std::to_array<std::string_view>({
    "/opt/hpcx/nccl_rdma_sharp_plugin/lib",
    "/usr/local/nvidia/lib64",
    "/opt/amazon/ofi-nccl/lib/x86_64-linux-gnu",
    "/opt/amazon/ofi-nccl/lib/aarch64-linux-gnu",
    "/opt/amazon/ofi-nccl/lib",
});
constexpr std::string_view kDefaultNetPlugin = "libnccl-net.so";

// NCCL's openPluginLib (src/plugin/plugin_open.cc) dlopens the name as given
// and then, unless the name holds a '/' or already reads "lib*.so",
// "libnccl-net-<name>.so". An empty name means the default libnccl-net.so.
std::vector<std::string> plugin_file_names(std::string_view name) {
    if (name.empty()) return {std::string(kDefaultNetPlugin)};
    std::vector<std::string> names{std::string(name)};
    bool is_path = name.find('/') != std::string_view::npos;
    bool is_library_name = name.starts_with("lib") && name.ends_with(".so");
    if (!is_path && !is_library_name) names.push_back("libnccl-net-" + std::string(name) + ".so");
    return names;
}

// tryOpenLib treats any case-insensitive prefix of "STATIC_PLUGIN" as "the
// plugin is linked into the program": nothing to find on disk.
bool is_static_plugin(std::string_view name) {
    constexpr std::string_view kStatic = "STATIC_PLUGIN";
    if (name.empty() || name.size() > kStatic.size()) return false;
    for (std::size_t i = 0; i < name.size(); ++i) {
        if (std::toupper(static_cast<unsigned char>(name[i])) != kStatic[i]) return false;
    }
    return true;
}

struct LibraryLookup {
    std::string found;                   // full path dlopen would open
    std::string off_path;                // found only in a directory dlopen does not search
    std::vector<std::string> undecided;  // paths the container view could not answer for
};

LibraryLookup find_library(const FileView& files, const std::vector<std::string>& dirs,
                           const std::vector<std::string>& file_names) {
    LibraryLookup lookup;
    bool over_bound = false;
    auto probe = [&](const std::string& path) {
        FileInfo info = files.stat(path);
        if (info.kind == FileKind::regular) return true;
        if (info.kind != FileKind::unknown) return false;
        // Past the check's bound every path is unknown: name the bound once.
        if (info.detail.starts_with(kCheckBoundDetail)) {
            if (!over_bound) lookup.undecided.push_back(path + " (" + info.detail + ")");
            over_bound = true;
        } else if (lookup.undecided.size() < 16) {
            lookup.undecided.push_back(path);
        }
        return false;
    };
    for (const auto& file : file_names) {
        if (file.find('/') != std::string::npos) {
            // dlopen takes a name with a '/' as a path, relative to the task's working directory.
            if (!file.starts_with('/')) {
                lookup.undecided.push_back(file);
            } else if (probe(file)) {
                lookup.found = file;
                return lookup;
            }
            continue;
        }
        for (const auto& dir : dirs) {
            // Most loader directories do not exist in a given image. Asking
            // for the file alone costs nothing more then (a view remembers
            // the directories on the way: rooted_file_view.h), while a look
            // at the directory itself also opens it to check it is readable.
            if (probe(dir + "/" + file)) {
                lookup.found = dir + "/" + file;
                return lookup;
            }
        }
    }
    for (const auto& file : file_names) {
        if (file.find('/') != std::string::npos) continue;
        for (auto dir : kPluginInstallDirs) {
            std::string path = std::string(dir) + "/" + file;
            if (std::find(dirs.begin(), dirs.end(), dir) == dirs.end() && files.stat(path).kind == FileKind::regular) {
                lookup.off_path = path;
                return lookup;
            }
        }
    }
    return lookup;
}

// The external plugins NCCL_NET_PLUGIN asks for: initPluginLibsOnceFunc
// turns "none" (any case) into an empty list and splits the rest with strtok_r.
std::vector<std::string> requested_plugins(std::string_view value) {
    constexpr std::string_view kNone = "none";
    bool none = value.size() == kNone.size() &&
                std::equal(value.begin(), value.end(), kNone.begin(),
                           [](char a, char b) { return std::tolower(static_cast<unsigned char>(a)) == b; });
    return none ? std::vector<std::string>{} : split_list(value, ',');
}

// ---------------------------------------------------------------------------
// net.hca-matches-nothing

// The profile's NCCL_IB_HCA, else an exact list of the HCAs it says jobs
// should use, else of this node's HCAs with an active port.
std::string proposed_hca_filter(const Profile& profile, const NodeTopology& topo) {
    if (profile.nccl.ib_hca) return *profile.nccl.ib_hca;
    return "=" + join(profile.node.hcas.empty() ? active_hcas(topo) : profile.node.hcas, ",");
}

void check_hca_matches_nothing(const RuleInput& in, RuleOutput& out) {
    const nccl::Setting* hca = setting_or_unknown(in, out, "NCCL_IB_HCA", "which HCAs NCCL_IB_HCA selects");
    if (hca == nullptr) return;
    if (!in.ctx.topology) {
        out.unknown("cannot tell whether NCCL_IB_HCA=" + hca->value + " selects an active port because " +
                    in.ctx.topology.reason());
        return;
    }
    const NodeTopology& topo = *in.ctx.topology;
    nccl::DeviceFilter filter = nccl::parse_hca_filter(hca->value);
    std::vector<std::string> selected_inactive;
    std::vector<std::string> selected_unknown;
    for (const auto& nic : topo.nics) {
        if (nic.hca.empty()) continue;
        if (nic.ports.empty() && nccl::matches(filter, nic.hca)) selected_unknown.push_back(nic.hca);
        for (const auto& port : nic.ports) {
            if (!nccl::matches(filter, nic.hca, port.number)) continue;
            if (is_active(port)) return;  // NCCL gets at least one device
            if (port.state.empty()) {
                selected_unknown.push_back(port_name(nic, port));
            } else {
                selected_inactive.push_back(port_name(nic, port) + " (" + port.state + ")");
            }
        }
    }
    std::vector<std::string> active = active_ports(topo);
    if (!selected_unknown.empty()) {
        out.unknown("cannot tell whether NCCL_IB_HCA=" + hca->value + " selects an active port because " + topo.source +
                    " does not give the state of " + join(selected_unknown));
        return;
    }
    // Without any active port NCCL has no IB device whatever the filter says;
    // net.ib-port-degraded and hw.inventory report the hardware.
    if (active.empty()) return;

    std::string message =
        "NCCL_IB_HCA=" + hca->value + " selects none of this node's active ports (" + join(active) + ")";
    if (!selected_inactive.empty()) message += "; it matches only " + join(selected_inactive);
    if (hca->value.find_first_of("\"'") != std::string::npos) message += "; the quotes are part of the value";
    message += ": NCCL silently falls back to TCP sockets";
    Finding& finding = out.fire(std::move(message));
    add_setting_evidence(finding, *hca);
    finding.evidence.emplace_back("active_ports", join(active));
    if (!selected_inactive.empty()) finding.evidence.emplace_back("matched_inactive_ports", join(selected_inactive));
    finding.evidence.emplace_back("topology", topo.source);
    finding.remediation.push_back(RemediationOp::set_env("NCCL_IB_HCA", proposed_hca_filter(in.profile, topo)));
}

const TableRule kHcaMatchesNothing{
    RuleInfo{
        .id = "net.hca-matches-nothing",
        .title = "NCCL_IB_HCA selects no active port",
        .default_action = Action::block,
        .severity = Severity::error,
        .scopes = kScopeLive | kScopeNode | kScopeCli,
        .nccl_only = true,
        .checks = "The effective `NCCL_IB_HCA` (task environment or nccl.conf), read with NCCL's own rules: a "
                  "leading `^` excludes, then `=` asks for exact names, otherwise each entry is a prefix "
                  "(`mlx5_1` also matches `mlx5_10`), `hca:port` restricts the port, and quotes are kept "
                  "literally. It fires when the filter selects none of this node's ACTIVE InfiniBand/RoCE ports.",
        .why = "NCCL only considers ACTIVE ports that pass the filter (ncclIbInitDevices). When none does, it "
               "logs `NET/IB : No device found.` at INFO level, which is invisible with the default NCCL_DEBUG, and "
               "moves on to its TCP socket transport: the job runs, at a fraction of the fabric's bandwidth.",
        .evidence = "The `NCCL_IB_HCA` value and where it was set (environment or conf file and line), the node's "
                    "active ports, ports the filter matches that are not ACTIVE, and the topology source.",
        .fix = "Set `NCCL_IB_HCA` to the profile's `nccl.ib_hca`, else to an exact filter of the profile's "
               "`node.hcas`, else of this node's HCAs with an active port (`=mlx5_0,mlx5_1,...`). Never quote the "
               "value in nccl.conf.",
    },
    check_hca_matches_nothing};

// ---------------------------------------------------------------------------
// net.ib-disabled

void check_ib_disabled(const RuleInput& in, RuleOutput& out) {
    const nccl::Setting* disable =
        setting_or_unknown(in, out, "NCCL_IB_DISABLE", "whether the IB transport is disabled");
    if (disable == nullptr) return;
    auto value = effective_int(*disable);
    if (!value || *value == 0) return;  // ncclIbInitDevices: `if (ncclParamIbDisable())`
    Condition rdma = node_has_rdma(in);
    Condition multi_node = multi_node_job(in.ctx);
    if (!all_hold(out, "whether NCCL_IB_DISABLE=" + disable->value + " pushes inter-node traffic onto TCP sockets",
                  {rdma, multi_node})) {
        return;
    }
    Finding& finding =
        out.fire("NCCL_IB_DISABLE=" + disable->value + " turns NCCL's InfiniBand/RoCE transport off for this " +
                 std::to_string(*in.ctx.job.nodes) + "-node job on " + rdma_description(in) +
                 ": inter-node traffic silently goes over TCP sockets");
    add_setting_evidence(finding, *disable);
    finding.evidence.emplace_back("parsed", std::to_string(*value));
    finding.evidence.emplace_back("job_nodes", std::to_string(*in.ctx.job.nodes));
    add_rdma_evidence(finding, in);
    finding.remediation = restore_default(*disable, "0");
}

const TableRule kIbDisabled{
    RuleInfo{
        .id = "net.ib-disabled",
        .title = "NCCL_IB_DISABLE on an InfiniBand/RoCE node",
        .default_action = Action::block,
        .severity = Severity::error,
        .scopes = kScopeLive | kScopeKubernetes | kScopeCli,
        .nccl_only = true,
        .checks = "A multi-node job whose effective `NCCL_IB_DISABLE` reads as non-zero (strtoll: `1`, `2`, `1 # x`; "
                  "`true` reads as 0 and changes nothing) on a node with ACTIVE IB/RoCE ports, or one whose profile "
                  "declares RDMA NICs.",
        .why = "With the variable set, NCCL's IB transport refuses to initialise and NCCL uses TCP sockets instead "
               "(the NCCL docs: \"NCCL will fall back to using IP sockets\"). Nothing is printed with the default "
               "NCCL_DEBUG; the job just runs far slower across nodes.",
        .evidence =
            "The value and where it was set, the value NCCL parses, the job's node count, and the node's active "
            "ports (or the profile's RDMA inventory).",
        .fix = "Unset `NCCL_IB_DISABLE`. When it comes from a conf file, the environment overrides it with "
               "`NCCL_IB_DISABLE=0` until the line is removed.",
    },
    check_ib_disabled};

// ---------------------------------------------------------------------------
// net.fallback-unguarded

// Is a net plugin in charge (aws-ofi-nccl, TCPXO, gIB, ...)? Then NCCL_NET=IB
// would be wrong and the plugin's own name is not ours to guess.
Condition no_net_plugin(const RuleInput& in) {
    if (const nccl::Setting* plugin = in.nccl.get("NCCL_NET_PLUGIN")) {
        return Condition::known(requested_plugins(plugin->value).empty());
    }
    if (in.profile.nccl.net_plugin) return Condition::known(false);
    if (!in.files) return Condition::unknown("the container's file view is unknown");
    LibraryLookup lookup = find_library(
        *in.files, nccl::loader_dirs(rules::task_env(in), in.files, rules::node_arch(in)), plugin_file_names({}));
    if (!lookup.found.empty()) return Condition::known(false);
    if (!lookup.undecided.empty()) {
        return Condition::unknown(in.files->describe() + " cannot say whether " + join(lookup.undecided) +
                                  " exists (NCCL would load it as its net plugin)");
    }
    return Condition::known(true);
}

void check_fallback_unguarded(const RuleInput& in, RuleOutput& out) {
    if (in.nccl.get("NCCL_NET") != nullptr) return;
    if (!in.nccl.decided("NCCL_NET")) {
        out.unknown(in.ctx.env ? "cannot tell whether NCCL_NET guards against a silent socket fallback because " +
                                     rules::env_unknown_reason(in.ctx, "NCCL_NET")
                               : "cannot tell whether NCCL_NET guards against a silent socket fallback because the "
                                 "task environment is unknown: " +
                                     in.ctx.env.reason());
        return;
    }
    Condition rdma = node_has_rdma(in);
    Condition multi_node = multi_node_job(in.ctx);
    // The plugin search reads ld.so.conf and asks some 25 directories for the
    // file: a third of a task check's time (docs/performance.md). A
    // single-node job or a node without RDMA cannot fire, whatever it finds.
    if (rdma.fails() || multi_node.fails()) return;
    Condition no_plugin = no_net_plugin(in);
    if (!all_hold(out, "whether an IB failure would silently fall back to sockets", {rdma, multi_node, no_plugin}))
        return;

    std::string net(in.profile.nccl.net.value_or(std::string(kDefaultNet)));
    Finding& finding = out.fire("NCCL_NET is unset for this " + std::to_string(*in.ctx.job.nodes) + "-node job on " +
                                rdma_description(in) +
                                ": if the IB transport fails to initialise, NCCL silently "
                                "falls back to TCP sockets instead of failing");
    finding.evidence.emplace_back("NCCL_NET", "(unset)");
    finding.evidence.emplace_back("job_nodes", std::to_string(*in.ctx.job.nodes));
    add_rdma_evidence(finding, in);
    finding.evidence.emplace_back("net_plugin",
                                  "none (NCCL_NET_PLUGIN unset or none, no libnccl-net.so on the library path)");
    finding.remediation.push_back(RemediationOp::set_env("NCCL_NET", net));
}

const TableRule kFallbackUnguarded{
    RuleInfo{
        .id = "net.fallback-unguarded",
        .title = "Multi-node job without NCCL_NET",
        .default_action = Action::warn,
        .severity = Severity::warning,
        .scopes = kScopeLive | kScopeKubernetes | kScopeCli,
        .nccl_only = true,
        .checks = "A multi-node job on a node with ACTIVE IB/RoCE ports (or a profile that declares RDMA NICs) whose "
                  "effective `NCCL_NET` is unset, while no external net plugin is in use (`NCCL_NET_PLUGIN` unset or "
                  "`none`, no `nccl.net_plugin` in the profile, no `libnccl-net.so` on the container's library path).",
        .why = "Without `NCCL_NET`, NCCL tries its transports in order and takes the first that initialises: a "
               "mistyped `NCCL_IB_HCA`, a missing `/dev/infiniband` in the container or a down port silently gives "
               "TCP sockets. With `NCCL_NET=IB` the same failure stops communicator init with \"Failed to initialize "
               "any NET plugin\", so it is seen at once instead of as a slow job.",
        .evidence = "The job's node count, the node's active ports (or the profile's RDMA inventory), and that no net "
                    "plugin is in use.",
        .fix = "Set `NCCL_NET` to the profile's `nccl.net` (`IB` unless the profile says otherwise). Not for clusters "
               "whose traffic goes through a net plugin (aws-ofi-nccl, TCPXO, gIB): name the plugin in the profile.",
    },
    check_fallback_unguarded};

// ---------------------------------------------------------------------------
// net.plugin-missing

void check_plugin_missing(const RuleInput& in, RuleOutput& out) {
    const nccl::Setting* env_plugin = in.nccl.get("NCCL_NET_PLUGIN");
    std::vector<std::string> plugins;
    std::string requested;
    if (env_plugin != nullptr) {
        plugins = requested_plugins(env_plugin->value);
        if (plugins.empty()) return;  // external plugins disabled on purpose
        requested = "NCCL_NET_PLUGIN=" + env_plugin->value;
    } else if (in.profile.nccl.net_plugin) {
        plugins = {*in.profile.nccl.net_plugin};
        requested = "profile '" + in.profile.name + "' net plugin " + *in.profile.nccl.net_plugin;
    } else {
        return;
    }
    if (std::any_of(plugins.begin(), plugins.end(), is_static_plugin)) return;
    if (!in.files) {
        out.unknown("cannot tell whether " + requested + " is in the container because its file view is unknown");
        return;
    }

    std::vector<std::string> dirs = nccl::loader_dirs(rules::task_env(in), in.files, rules::node_arch(in));
    std::vector<std::string> tried;
    std::vector<std::string> undecided;
    std::string off_path;
    for (const auto& plugin : plugins) {
        std::vector<std::string> names = plugin_file_names(plugin);
        LibraryLookup lookup = find_library(*in.files, dirs, names);
        if (!lookup.found.empty()) return;  // NCCL loads the first plugin it can open
        tried.insert(tried.end(), names.begin(), names.end());
        undecided.insert(undecided.end(), lookup.undecided.begin(), lookup.undecided.end());
        if (off_path.empty()) off_path = lookup.off_path;
    }
    if (!undecided.empty()) {
        out.unknown("cannot tell whether " + requested + " is in the container because " + in.files->describe() +
                    " cannot say whether " + join(undecided) + " exists");
        return;
    }

    std::string message = requested + ": the container has no " + join(tried, " or ");
    if (!off_path.empty()) {
        message += " on its library path (" + off_path + " exists, but dlopen does not search its directory)";
    } else {
        message += " on its library path";
    }
    message += ": NCCL silently falls back to its internal IB or socket transport";
    Finding& finding = out.fire(std::move(message));
    if (env_plugin != nullptr) {
        add_setting_evidence(finding, *env_plugin);
    } else {
        finding.evidence.emplace_back("profile_net_plugin", *in.profile.nccl.net_plugin);
    }
    finding.evidence.emplace_back("library_files", join(tried));
    finding.evidence.emplace_back("searched", join(dirs, ":"));
    if (!off_path.empty()) finding.evidence.emplace_back("found_off_path", off_path);
    finding.evidence.emplace_back("container_view", in.files->describe());
    if (!off_path.empty()) {
        std::string dir = off_path.substr(0, off_path.rfind('/'));
        std::string current;
        if (in.ctx.env) {
            if (auto it = in.ctx.env->find("LD_LIBRARY_PATH"); it != in.ctx.env->end()) current = it->second;
        }
        finding.remediation.push_back(
            RemediationOp::set_env("LD_LIBRARY_PATH", current.empty() ? dir : dir + ":" + current));
    } else {
        finding.remediation.push_back(
            RemediationOp::manual_step("make " + tried.back() +
                                       " visible in the container: use an image that ships it, or mount the host's "
                                       "plugin directory and add it to LD_LIBRARY_PATH"));
    }
}

const TableRule kPluginMissing{
    RuleInfo{
        .id = "net.plugin-missing",
        .title = "NCCL net plugin not in the container",
        .default_action = Action::block,
        .severity = Severity::error,
        .scopes = kScopeLive | kScopeCli,
        .nccl_only = true,
        .checks = "Each library `NCCL_NET_PLUGIN` names (a comma list; `none` disables plugins), or the profile's "
                  "`nccl.net_plugin` when the variable is unset, looked up the way NCCL's openPluginLib does: the name "
                  "as given, then `libnccl-net-<name>.so` unless the name contains `/` or already reads `lib*.so`. "
                  "Each file is searched in the container along dlopen's path: `LD_LIBRARY_PATH`, the directories in "
                  "`/etc/ld.so.conf{,.d}`, then the system library directories.",
        .why = "A plugin NCCL cannot open is reported only at INFO (\"NET/Plugin: Could not find\"); NCCL then uses "
               "its internal IB transport or TCP sockets. On fabrics that need the plugin (EFA with aws-ofi-nccl, "
               "GKE TCPXO/gIB) that is a silent drop to socket speed, e.g. ~4 GB/s instead of ~340 GB/s with TCPXO.",
        .evidence = "The value and where it was set (or the profile's plugin), the file names tried, the directories "
                    "searched, a copy found outside dlopen's path, and the container view.",
        .fix = "Use an image that ships the plugin, or mount it and put its directory on `LD_LIBRARY_PATH`. When the "
               "library is in the container but off the path (e.g. `/opt/hpcx/nccl_rdma_sharp_plugin/lib`), "
               "launchguard proposes the `LD_LIBRARY_PATH` that finds it.",
    },
    check_plugin_missing};

// ---------------------------------------------------------------------------
// net.qps-low

// The fastest ACTIVE port of the node, else the profile's rate.
Condition link_fast_enough(const RuleInput& in, double min_gbps, std::string& rate_text, std::string& rate_source) {
    if (in.ctx.topology) {
        std::optional<double> fastest;
        for (const auto& nic : in.ctx.topology->nics) {
            for (const auto& port : nic.ports) {
                if (is_active(port) && port.rate_gbps) fastest = std::max(fastest.value_or(0), *port.rate_gbps);
            }
        }
        if (fastest) {
            rate_text = format_number(*fastest);
            rate_source = in.ctx.topology->source;
            return Condition::known(*fastest >= min_gbps);
        }
    }
    if (in.profile.node.ib_rate_gbps) {
        rate_text = format_number(*in.profile.node.ib_rate_gbps);
        rate_source = "profile " + in.profile.name;
        return Condition::known(*in.profile.node.ib_rate_gbps >= min_gbps);
    }
    return Condition::unknown(
        "neither the node (" +
        (in.ctx.topology ? in.ctx.topology->source + " has no port rates" : in.ctx.topology.reason()) +
        ") nor profile '" + in.profile.name + "' gives the link rate");
}

void check_qps_low(const RuleInput& in, RuleOutput& out) {
    if (!in.profile.nccl.qps) return;
    const auto& qps = *in.profile.nccl.qps;
    const nccl::Setting* setting = in.nccl.get("NCCL_IB_QPS_PER_CONNECTION");
    if (setting == nullptr && !in.nccl.decided("NCCL_IB_QPS_PER_CONNECTION")) {
        out.unknown(in.ctx.env ? "cannot tell how many queue pairs NCCL opens per connection because " +
                                     rules::env_unknown_reason(in.ctx, "NCCL_IB_QPS_PER_CONNECTION")
                               : "cannot tell how many queue pairs NCCL opens per connection because the task "
                                 "environment is unknown: " +
                                     in.ctx.env.reason());
        return;
    }
    long long effective = kDefaultQpsPerConnection;
    if (setting != nullptr) effective = effective_int(*setting).value_or(kDefaultQpsPerConnection);
    if (effective >= qps.min) return;

    Condition big_job = in.ctx.job.total_gpus
                            ? Condition::known(*in.ctx.job.total_gpus >= qps.min_total_gpus)
                            : Condition::unknown("the job's GPU count is unknown: " + in.ctx.job.total_gpus.reason());
    std::string rate_text;
    std::string rate_source;
    Condition fast_link = link_fast_enough(in, qps.min_link_gbps, rate_text, rate_source);
    if (!all_hold(out, "whether " + std::to_string(effective) + " queue pair(s) per connection are enough",
                  {big_job, fast_link})) {
        return;
    }

    std::string current = setting != nullptr ? "NCCL_IB_QPS_PER_CONNECTION=" + setting->value
                                             : "NCCL_IB_QPS_PER_CONNECTION is unset (NCCL's default 1)";
    Finding& finding =
        out.fire(current + " for a " + std::to_string(*in.ctx.job.total_gpus) + "-GPU job on " + rate_text +
                 " Gb/s links; profile '" + in.profile.name + "' needs at least " + std::to_string(qps.min) +
                 ": with too few queue pairs the fabric's paths stay underused");
    if (setting != nullptr) {
        add_setting_evidence(finding, *setting);
    } else {
        finding.evidence.emplace_back("NCCL_IB_QPS_PER_CONNECTION", "(unset)");
    }
    finding.evidence.emplace_back("effective_qps", std::to_string(effective));
    finding.evidence.emplace_back("job_total_gpus", std::to_string(*in.ctx.job.total_gpus));
    finding.evidence.emplace_back("link_rate_gbps", rate_text);
    finding.evidence.emplace_back("link_rate_source", rate_source);
    finding.evidence.emplace_back("profile_min_qps", std::to_string(qps.min));
    finding.remediation.push_back(RemediationOp::set_env("NCCL_IB_QPS_PER_CONNECTION", std::to_string(qps.min)));
}

const TableRule kQpsLow{
    RuleInfo{
        .id = "net.qps-low",
        .title = "Too few queue pairs per connection for the fabric",
        .default_action = Action::patch,
        .severity = Severity::warning,
        .scopes = kScopeLive | kScopeKubernetes | kScopeCli,
        .nccl_only = true,
        .checks = "With a profile that sets `nccl.qps_per_connection`: the job has at least `min_total_gpus` GPUs, "
                  "the node's fastest ACTIVE port (or the profile's `node.ib_rate_gbps`) runs at `min_link_gbps` or "
                  "more, and the effective `NCCL_IB_QPS_PER_CONNECTION` (default 1) is below `min`.",
        .why = "NVIDIA's Exemplar Cloud work found one queue pair per connection leaving a 1.6 Tb/s ConnectX-8 fabric "
               "underused at 512 GPUs; `NCCL_IB_QPS_PER_CONNECTION=4` closed the gap, and NVIDIA's GB300/B300 recipes "
               "set 4 at >= 512 GPUs. NCCL's tuning guide: on ECMP-routed, multi-port or RoCE fabrics more QPs per "
               "connection give more path diversity.",
        .evidence =
            "The value (or that it is unset) and where it was set, the job's GPU count, the link rate and where "
            "it came from, and the profile minimum.",
        .fix = "Set `NCCL_IB_QPS_PER_CONNECTION` to the profile minimum (applied automatically when the front end can "
               "patch the environment).",
    },
    check_qps_low};

// ---------------------------------------------------------------------------
// net.socket-ifname-nomatch

bool starts_with_any(std::string_view name, std::initializer_list<std::string_view> prefixes) {
    return std::any_of(prefixes.begin(), prefixes.end(), [&](std::string_view p) { return name.starts_with(p); });
}

// A filter that selects real interfaces: those sharing the letters of what
// the user wrote ("eth" of "eth9"), else what ncclFindInterfaces would take
// by itself: ib* first, else anything but docker, lo and virbr.
std::string suggest_ifname(const nccl::DeviceFilter& filter, const std::vector<NetInterface>& interfaces) {
    std::vector<std::string> usable;
    for (const auto& itf : interfaces) {
        if (itf.up && !starts_with_any(itf.name, {"lo", "docker", "virbr"})) usable.push_back(itf.name);
    }
    auto pick = [&](auto&& predicate) {
        std::vector<std::string> picked;
        std::copy_if(usable.begin(), usable.end(), std::back_inserter(picked), predicate);
        return picked;
    };
    std::vector<std::string> chosen;
    if (!filter.exclude) {
        chosen = pick([&](const std::string& name) {
            return std::any_of(filter.entries.begin(), filter.entries.end(), [&](const nccl::FilterEntry& entry) {
                std::string_view letters = entry.name;
                letters.remove_prefix(std::min(letters.size(), letters.find_first_not_of("\"'")));
                letters = letters.substr(0, letters.find_first_of("0123456789\"'"));
                return !letters.empty() && name.starts_with(letters);
            });
        });
    }
    if (chosen.empty()) chosen = pick([](const std::string& name) { return name.starts_with("ib"); });
    if (chosen.empty()) chosen = usable;
    return chosen.empty() ? std::string() : "=" + join(chosen, ",");
}

void check_socket_ifname_nomatch(const RuleInput& in, RuleOutput& out) {
    const nccl::Setting* ifname =
        setting_or_unknown(in, out, "NCCL_SOCKET_IFNAME", "which interfaces NCCL_SOCKET_IFNAME selects");
    if (ifname == nullptr) return;
    nccl::DeviceFilter filter = nccl::parse_ifname_filter(ifname->value);
    if (filter.ignored) return;  // NCCL chooses by itself
    if (!in.ctx.interfaces) {
        out.unknown("cannot tell whether NCCL_SOCKET_IFNAME=" + ifname->value + " matches an interface because " +
                    in.ctx.interfaces.reason());
        return;
    }
    std::vector<std::string> listed;
    std::vector<std::string> matched_down;
    for (const auto& itf : *in.ctx.interfaces) {
        bool selected = nccl::matches(filter, itf.name);
        if (selected && itf.up) return;
        if (selected) matched_down.push_back(itf.name);
        listed.push_back(itf.up ? itf.name : itf.name + " (down)");
    }

    std::string message = "NCCL_SOCKET_IFNAME=" + ifname->value + " matches none of the task's running interfaces (" +
                          (listed.empty() ? std::string("none") : join(listed)) + ")";
    if (!matched_down.empty()) message += "; it matches only " + join(matched_down) + ", which is down";
    if (ifname->value.find_first_of("\"'") != std::string::npos) message += "; the quotes are part of the value";
    message += ": NCCL cannot bootstrap and communicator init fails";
    Finding& finding = out.fire(std::move(message));
    add_setting_evidence(finding, *ifname);
    finding.evidence.emplace_back("interfaces", join(listed));
    finding.evidence.emplace_back("interfaces_source", in.ctx.interfaces.source());
    std::string suggestion = suggest_ifname(filter, *in.ctx.interfaces);
    if (!suggestion.empty()) {
        finding.remediation.push_back(RemediationOp::set_env("NCCL_SOCKET_IFNAME", suggestion));
    } else {
        finding.remediation.push_back(
            RemediationOp::manual_step("give the task a running network interface, or unset NCCL_SOCKET_IFNAME"));
    }
}

const TableRule kSocketIfnameNomatch{
    RuleInfo{
        .id = "net.socket-ifname-nomatch",
        .title = "NCCL_SOCKET_IFNAME matches no interface",
        .default_action = Action::block,
        .severity = Severity::error,
        .scopes = kScopeLive | kScopeCli,
        .nccl_only = true,
        .checks = "The effective `NCCL_SOCKET_IFNAME`, read as NCCL's ncclOsFindInterfaces does (prefix list, `^` "
                  "excludes, `=` exact, quotes literal, a value of one character or less is ignored), against the "
                  "running interfaces of the task's network namespace.",
        .why =
            "NCCL bootstraps and runs its socket transport over these interfaces. When none matches, every rank "
            "fails init with \"Bootstrap : no socket interface found\" — loud, but only after the allocation has "
            "started, on every node. Blocking at launch saves the allocation and names the interfaces that do exist.",
        .evidence = "The value and where it was set, the task's interfaces (down ones marked), and where that list "
                    "came from.",
        .fix = "Set `NCCL_SOCKET_IFNAME` to a filter that matches a running interface; launchguard proposes the "
               "interfaces sharing the name's letters (`eth9` -> `=eth0,eth1`), else those NCCL would pick itself "
               "(`ib*` first, then anything but `lo`, `docker*`, `virbr*`).",
    },
    check_socket_ifname_nomatch};

// ---------------------------------------------------------------------------
// net.ib-port-degraded

struct PortSelection {
    std::string described;  // "NCCL_IB_HCA=mlx5_0 (environment)", "profile node.hcas", "all HCAs"
    std::optional<nccl::DeviceFilter> filter;
    std::vector<std::string> profile_hcas;

    // port -1: any port of the HCA.
    [[nodiscard]] bool selects(const Nic& nic, int port = -1) const {
        if (filter) return nccl::matches(*filter, nic.hca, port);
        if (!profile_hcas.empty())
            return std::find(profile_hcas.begin(), profile_hcas.end(), nic.hca) != profile_hcas.end();
        return true;
    }
};

PortSelection ports_the_job_uses(const RuleInput& in) {
    PortSelection selection;
    if (const nccl::Setting* hca = in.nccl.get("NCCL_IB_HCA")) {
        selection.filter = nccl::parse_hca_filter(hca->value);
        selection.described = "NCCL_IB_HCA=" + hca->value + " (" + hca->origin + ")";
    } else if (!in.profile.node.hcas.empty()) {
        selection.profile_hcas = in.profile.node.hcas;
        selection.described = "profile '" + in.profile.name + "' node.hcas";
    } else {
        selection.described = "all HCAs (NCCL_IB_HCA unset)";
    }
    return selection;
}

void check_ib_port_degraded(const RuleInput& in, RuleOutput& out) {
    if (!in.ctx.topology) {
        out.unknown("cannot tell whether the node's IB ports are healthy because " + in.ctx.topology.reason());
        return;
    }
    const NodeTopology& topo = *in.ctx.topology;
    const std::optional<double> expected = in.profile.node.ib_rate_gbps;
    PortSelection selection = ports_the_job_uses(in);
    std::vector<std::string> unknown_state;
    std::vector<std::string> unknown_rate;
    for (const auto& nic : topo.nics) {
        if (nic.hca.empty()) continue;
        if (nic.ports.empty() && selection.selects(nic)) unknown_state.push_back(nic.hca);
        for (const auto& port : nic.ports) {
            if (!selection.selects(nic, port.number)) continue;
            std::vector<std::string> problems;
            if (port.state.empty()) {
                unknown_state.push_back(port_name(nic, port));
            } else if (!is_active(port)) {
                problems.push_back("is " + port.state);
            }
            if (!port.phys_state.empty() && port.phys_state != "LinkUp") {
                problems.push_back("physical state " + port.phys_state);
            }
            if (expected && port.rate_gbps && *port.rate_gbps < *expected) {
                problems.push_back("runs at " + format_number(*port.rate_gbps) + " Gb/s, below the profile's " +
                                   format_number(*expected) + " Gb/s");
            } else if (expected && !port.rate_gbps && is_active(port)) {
                unknown_rate.push_back(port_name(nic, port));
            }
            if (problems.empty()) continue;

            std::string consequence = is_active(port) ? "every transfer through it is capped"
                                                      : "NCCL skips it and the job runs on fewer rails";
            Finding& finding = out.fire(nic.hca + " port " + std::to_string(port.number) + " " + join(problems) + ": " +
                                        consequence + " (selected by " + selection.described + ")");
            finding.evidence.emplace_back("hca", nic.hca);
            finding.evidence.emplace_back("port", std::to_string(port.number));
            finding.evidence.emplace_back("state", port.state.empty() ? "unknown" : port.state);
            finding.evidence.emplace_back("phys_state", port.phys_state.empty() ? "unknown" : port.phys_state);
            finding.evidence.emplace_back("rate_gbps", port.rate_gbps ? format_number(*port.rate_gbps) : "unknown");
            if (expected) finding.evidence.emplace_back("expected_rate_gbps", format_number(*expected));
            if (!port.link_layer.empty()) finding.evidence.emplace_back("link_layer", port.link_layer);
            finding.evidence.emplace_back("selected_by", selection.described);
            finding.evidence.emplace_back("topology", topo.source);
            finding.remediation.push_back(RemediationOp::manual_step(
                "drain the node and check " + nic.hca + " port " + std::to_string(port.number) +
                " (cable, transceiver, switch port; `ibstat " + nic.hca + " " + std::to_string(port.number) + "`)"));
        }
    }
    if (!unknown_state.empty()) {
        out.unknown("cannot tell whether " + join(unknown_state) + " are ACTIVE because " + topo.source +
                    " does not give their port state");
    }
    if (!unknown_rate.empty()) {
        out.unknown("cannot tell whether " + join(unknown_rate) + " run at the profile's " + format_number(*expected) +
                    " Gb/s because " + topo.source + " does not give port rates (sysfs does)");
    }
}

const TableRule kIbPortDegraded{
    RuleInfo{
        .id = "net.ib-port-degraded",
        .title = "IB/RoCE port down or slow",
        .default_action = Action::block,
        .severity = Severity::error,
        .scopes = kScopeNode | kScopeLive | kScopeCli,
        .checks = "Every port of the HCAs the job will use — those `NCCL_IB_HCA` selects, else the profile's "
                  "`node.hcas`, else all — must be ACTIVE, in physical state LinkUp (when sysfs says), and at least "
                  "as fast as the profile's `node.ib_rate_gbps`.",
        .why = "NCCL silently skips ports that are not ACTIVE, so a node with a dead cable runs on fewer rails, and a "
               "port that trained at a lower rate (e.g. 200 instead of 400 Gb/s) caps every ring through it. One such "
               "node slows the whole job; nothing in NCCL's default output says so.",
        .evidence = "For each bad port: HCA, port, state, physical state, rate and the profile's rate, link layer, "
                    "what selected the HCA, and the topology source.",
        .fix = "Drain the node and repair the link (cable, transceiver, switch port; check with `ibstat`). In "
               "prolog context this is a node finding: the scheduler should not place jobs on it.",
    },
    check_ib_port_degraded};

// ---------------------------------------------------------------------------
// net.gdr-level-low, net.gdr-read-off

// ncclTopoCheckGdr (graph/paths.cc): without NCCL_NET_GDR_LEVEL the limit is
// P2C when NCCL_NET_GDR_C2C is on (its default since 2.27), else PXB. On x86
// no GPU-NIC path is P2C, so PXB and P2C allow the same pairs there; on Grace
// a NIC reached through the CPU's C2C link is at P2C.
// NCCL_NET_GDR_C2C came in 2.26.2 defaulting to 0 and defaults to 1 from
// 2.27.3 (NCCL_PARAM(NetGdrC2c, ...) in src/graph/paths.cc). With the
// variable unset the image's NCCL decides; an unknown version is taken as
// a current one.
constexpr nccl::Version kGdrC2cDefaultOn{2, 27, 3};

bool gdr_c2c_on(const RuleInput& in) {
    const nccl::Setting* c2c = in.nccl.get("NCCL_NET_GDR_C2C");
    if (c2c != nullptr) return effective_int(*c2c).value_or(1) != 0;
    if (!in.profile.node.grace) return true;  // no C2C path: only the fix's wording depends on it
    std::string where;
    auto version = rules::image_nccl_version(in, where);
    return !version || *version >= kGdrC2cDefaultOn;
}

int default_gdr_level(const RuleInput& in) {
    // Off Grace no GPU-NIC path is P2C: the default does not matter, and the
    // image's NCCL is not looked up.
    return in.profile.node.grace && gdr_c2c_on(in) ? rules::kPathP2c : rules::kPathPxb;
}

void check_gdr_level_low(const RuleInput& in, RuleOutput& out) {
    const nccl::Setting* level_setting =
        setting_or_unknown(in, out, "NCCL_NET_GDR_LEVEL", "whether GPUDirect RDMA is restricted");
    if (level_setting == nullptr) return;
    auto level = rules::parse_path_level(level_setting->value);
    if (!level) return;  // not a level NCCL knows: it keeps its default
    int threshold = default_gdr_level(in);
    if (*level >= threshold) return;

    std::string name(rules::path_level_name(*level));
    std::string shown = level_setting->value == name ? name : level_setting->value + " (" + name + ")";
    std::string reach = threshold == rules::kPathP2c ? "NICs reached through the Grace CPU (path P2C) and every pair"
                                                     : "every GPU–NIC pair";
    Finding& finding =
        out.fire("NCCL_NET_GDR_LEVEL=" + shown + " is below NCCL's default " +
                 std::string(rules::path_level_name(threshold)) + ": GPUDirect RDMA is off for " + reach +
                 " farther apart than " + name + ", so network traffic is staged through host memory");
    add_setting_evidence(finding, *level_setting);
    finding.evidence.emplace_back("level", name);
    finding.evidence.emplace_back("default_level", std::string(rules::path_level_name(threshold)));
    finding.remediation = restore_default(*level_setting, gdr_c2c_on(in) ? "P2C" : "PXB");
}

const TableRule kGdrLevelLow{
    RuleInfo{
        .id = "net.gdr-level-low",
        .title = "NCCL_NET_GDR_LEVEL below the default",
        .default_action = Action::warn,
        .severity = Severity::warning,
        .scopes = kScopeLive | kScopeKubernetes | kScopeCli,
        .nccl_only = true,
        .checks = "The effective `NCCL_NET_GDR_LEVEL`, read as ncclGetLevel does (exact upper-case names LOC, NVL, "
                  "NVB, C2C, PIX, PXB, P2C, PXN, PHB, SYS; legacy integers 0 LOC, 1 PIX, 2 PXB, 3 PHB, 4 and above "
                  "SYS; anything else is ignored), below NCCL's default: PXB, or P2C on Grace profiles while "
                  "`NCCL_NET_GDR_C2C` is on (its default since 2.27).",
        .why = "The level is the farthest GPU–NIC distance at which NCCL uses GPUDirect RDMA (ncclTopoCheckGdr). A "
               "lower level turns GDR off for the pairs beyond it and every network transfer is copied through host "
               "memory — slower, and costly in CPU memory bandwidth — without any message. On Grace, NCCL 2.30 "
               "replaces its P2C default with the user's level, so `PXB` there drops GDR for C2C-attached NICs.",
        .evidence = "The value and where it was set, the level NCCL reads from it, and NCCL's default level.",
        .fix = "Unset `NCCL_NET_GDR_LEVEL` (it is a workaround for VMs without a topology file — provide the file "
               "instead). From a conf file, the environment overrides it with NCCL's default level until the line "
               "is removed.",
    },
    check_gdr_level_low};

void check_gdr_read_off(const RuleInput& in, RuleOutput& out) {
    const nccl::Setting* read =
        setting_or_unknown(in, out, "NCCL_NET_GDR_READ", "whether GPUDirect RDMA reads are off");
    if (read == nullptr) return;
    auto value = effective_int(*read);
    if (!value || *value != 0) return;
    Finding& finding = out.fire("NCCL_NET_GDR_READ=" + read->value +
                                " turns GPUDirect RDMA off on the send path: every network send is first copied from "
                                "GPU to host memory");
    add_setting_evidence(finding, *read);
    finding.evidence.emplace_back("parsed", std::to_string(*value));
    finding.remediation = restore_default(*read, "-2");
}

const TableRule kGdrReadOff{
    RuleInfo{
        .id = "net.gdr-read-off",
        .title = "NCCL_NET_GDR_READ=0",
        .default_action = Action::warn,
        .severity = Severity::warning,
        .scopes = kScopeLive | kScopeKubernetes | kScopeCli,
        .nccl_only = true,
        .checks = "The effective `NCCL_NET_GDR_READ` reads as 0 under strtoll (`0`, but also `off` or `false`).",
        .why =
            "NCCL enables GDR reads by default on Ampere and newer GPUs (and on NVLink systems before that). With 0, "
            "ncclTopoCheckGdr refuses GDR for sends, so outgoing network data is staged through host memory: "
            "lower bandwidth and more CPU memory traffic, silently.",
        .evidence = "The value, where it was set, and the value NCCL parses.",
        .fix = "Unset `NCCL_NET_GDR_READ`. From a conf file, the environment overrides it with `-2` (NCCL's automatic "
               "default) until the line is removed.",
    },
    check_gdr_read_off};

// ---------------------------------------------------------------------------
// net.gdr-unavailable

// Why DMA-BUF, NCCL's other GPUDirect RDMA path (ncclIbDmaBufSupport in
// src/transport/net_ib/gdr.cc, tried when no peer-memory module is there),
// certainly cannot work; "" when launchguard cannot rule it out, which is
// most of the time: NCCL decides it with CUDA's
// CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED and a trial ibv_reg_dmabuf_mr.
std::string dmabuf_ruled_out(const RuleInput& in, const GpuDirectRdma& gdr) {
    if (const nccl::Setting* enable = in.nccl.get("NCCL_DMABUF_ENABLE")) {
        if (auto value = effective_int(*enable); value && *value == 0)
            return "NCCL_DMABUF_ENABLE=" + enable->value + " turns it off";
    }
    // Only the open GPU kernel modules export GPU memory as DMA-BUF; their
    // /proc/driver/nvidia/version reads "NVIDIA UNIX Open Kernel Module".
    if (gdr.nvidia_driver && gdr.nvidia_driver->find("Open Kernel Module") == std::string::npos &&
        gdr.nvidia_driver->find("NVIDIA") != std::string::npos) {
        return "the proprietary NVIDIA kernel module is loaded (" + *gdr.nvidia_driver +
               "); only the open kernel modules export GPU memory as DMA-BUF";
    }
    // RDMA registration of DMA-BUF memory (ib_umem_dmabuf) came with Linux 5.12.
    if (gdr.kernel_release) {
        // "5.4.0-150-generic": the major and minor numbers lead.
        std::vector<std::string> parts = split_list(*gdr.kernel_release, '.');
        auto major =
            parts.size() >= 2
                ? nccl::parse_version(parts[0] + "." + parts[1].substr(0, parts[1].find_first_not_of("0123456789")))
                : std::nullopt;
        if (major && *major < nccl::Version{5, 12, 0})
            return "Linux " + *gdr.kernel_release + " predates DMA-BUF memory registration for RDMA (5.12)";
    }
    return {};
}

void check_gdr_unavailable(const RuleInput& in, RuleOutput& out) {
    if (!in.profile.node.gpudirect_rdma) return;
    const auto& gdr = in.ctx.node.gpudirect;
    if (!gdr) {
        out.unknown("cannot tell whether GPUDirect RDMA is available because " + gdr.reason());
        return;
    }
    if (!gdr->peer_memory.empty()) return;  // ncclIbGdrSupport succeeds
    std::string dmabuf = dmabuf_ruled_out(in, *gdr);
    if (dmabuf.empty()) {
        out.unknown("cannot tell whether GPUDirect RDMA is available: no peer-memory module is registered (" +
                    join(std::vector<std::string>(kPeerMemoryFiles.begin(), kPeerMemoryFiles.end())) +
                    " absent), and whether DMA-BUF works is decided by a CUDA driver query launchguard does not make");
        return;
    }
    Finding& finding = out.fire("profile " + in.profile.name +
                                " needs GPUDirect RDMA, but no peer-memory module is registered "
                                "(nvidia_peermem not loaded) and DMA-BUF cannot work: " +
                                dmabuf + ". NCCL stages every network transfer through host memory");
    finding.evidence.emplace_back(
        "peer_memory", "none of " + join(std::vector<std::string>(kPeerMemoryFiles.begin(), kPeerMemoryFiles.end())));
    finding.evidence.emplace_back("nvidia_peermem_module", gdr->peermem_module_loaded ? "loaded" : "not loaded");
    finding.evidence.emplace_back("dmabuf", dmabuf);
    if (gdr->nvidia_driver) finding.evidence.emplace_back("nvidia_driver", *gdr->nvidia_driver);
    if (gdr->kernel_release) finding.evidence.emplace_back("kernel", *gdr->kernel_release);
    finding.evidence.emplace_back("source", gdr.source());
    finding.remediation.push_back(RemediationOp::manual_step(
        "load the peer-memory module on the node: modprobe nvidia_peermem, and list it in /etc/modules-load.d so it "
        "loads after every boot and driver upgrade; or run the open NVIDIA kernel modules on Linux 5.12 or later "
        "for DMA-BUF"));
}

const TableRule kGdrUnavailable{
    RuleInfo{
        .id = "net.gdr-unavailable",
        .title = "GPUDirect RDMA unavailable on the node",
        .default_action = Action::block,
        .severity = Severity::error,
        .scopes = kScopeNode | kScopeLive | kScopeCli,
        .checks = "On a node class whose profile sets `node.gpudirect_rdma: true`: whether either of NCCL's "
                  "GPUDirect RDMA paths can work. The peer-memory path works when one of the files NCCL's "
                  "ncclIbGdrSupport tests exists (`/sys/kernel/mm/memory_peers/nv_mem/version`, "
                  "`/sys/kernel/mm/memory_peers/nv_mem_nc/version`, `/sys/module/nvidia_peermem/version`). The "
                  "DMA-BUF path is decided by a CUDA driver query; launchguard rules it out only when "
                  "`NCCL_DMABUF_ENABLE=0`, the proprietary (not the open) NVIDIA kernel module is loaded, or the "
                  "kernel predates 5.12. Otherwise it says it cannot tell — never that GDR is missing.",
        .why = "Without GPUDirect RDMA the NIC cannot read or write GPU memory: NCCL copies every network transfer "
               "through host memory, with lower bandwidth and CPU memory traffic, and says so only at INFO/TRACE "
               "(\"GPU Direct RDMA Disabled for GPU ... / HCA ...\", ncclTopoCheckGdr in src/graph/paths.cc). The "
               "usual cause is an nvidia_peermem module that did not load after a driver upgrade.",
        .evidence = "Which peer-memory files are absent, whether the nvidia_peermem module is loaded, why DMA-BUF "
                    "cannot work, the driver and kernel versions.",
        .fix = "`modprobe nvidia_peermem` and load it at boot (`/etc/modules-load.d`); or use the open NVIDIA kernel "
               "modules on Linux 5.12 or later, which give NCCL DMA-BUF. In node checks the node is drained until "
               "then.",
    },
    check_gdr_unavailable};

// ---------------------------------------------------------------------------
// net.verbs-missing

// The rdma-core provider (lib<name>-rdmav<N>.so in a libibverbs/ directory)
// that drives each kernel RDMA driver.
std::string verbs_provider(std::string_view driver, std::string_view hca) {
    struct Pair {
        std::string_view driver;
        std::string_view provider;
    };
    static constexpr std::array kProviders = std::to_array<Pair>({
        {"mlx5_core", "mlx5"},
        {"mlx4_core", "mlx4"},
        {"bnxt_en", "bnxt_re"},
        {"irdma", "irdma"},
        {"ice", "irdma"},
        {"i40e", "irdma"},
        {"efa", "efa"},
        {"qede", "qedr"},
        {"hfi1", "hfi1verbs"},
        {"mana", "mana"},
        {"erdma", "erdma"},
        {"vmw_pvrdma", "vmw_pvrdma"},
    });
    for (const auto& pair : kProviders) {
        if (driver == pair.driver) return std::string(pair.provider);
    }
    // Without a driver link the device name's prefix is the kernel driver's ("mlx5_0").
    for (const auto& pair : kProviders) {
        if (hca.starts_with(pair.provider)) return std::string(pair.provider);
    }
    return {};
}

struct VerbsProblems {
    std::vector<std::string> missing;    // what the container lacks, in words
    std::vector<std::string> undecided;  // paths the view cannot answer for
    std::vector<std::string> fixes;
    std::string library;  // the libibverbs found
};

// The HCAs NCCL would open: those NCCL_IB_HCA selects, else those with an ACTIVE port.
std::vector<const Nic*> used_hcas(const RuleInput& in) {
    std::vector<const Nic*> nics;
    if (!in.ctx.topology) return nics;
    const nccl::Setting* hca = in.nccl.get("NCCL_IB_HCA");
    std::optional<nccl::DeviceFilter> filter;
    if (hca != nullptr) filter = nccl::parse_hca_filter(hca->value);
    for (const auto& nic : in.ctx.topology->nics) {
        if (nic.hca.empty() || !std::any_of(nic.ports.begin(), nic.ports.end(), is_active)) continue;
        if (filter && !nccl::matches(*filter, nic.hca)) continue;
        nics.push_back(&nic);
    }
    return nics;
}

void check_verbs_library(const RuleInput& in, const std::vector<std::string>& dirs, VerbsProblems& problems) {
    // buildIbvSymbols (src/misc/ibvsymbols.cc) dlopens NCCL_IBVERBS_LIB when
    // set (recent NCCL), then libibverbs.so, then libibverbs.so.1.
    std::vector<std::string> names;
    if (const nccl::Setting* lib = in.nccl.get("NCCL_IBVERBS_LIB")) names.push_back(lib->value);
    names.emplace_back("libibverbs.so");
    names.emplace_back("libibverbs.so.1");
    for (const auto& name : names) {
        if (name.find('/') != std::string::npos) {
            FileInfo info = in.files->stat(name);
            if (info.kind == FileKind::regular) {
                problems.library = name;
                return;
            }
            if (info.kind == FileKind::unknown) problems.undecided.push_back(name);
            continue;
        }
        nccl::LibraryFound found = nccl::find_in_dirs(*in.files, dirs, name);
        if (!found.path.empty()) {
            problems.library = found.path;
            return;
        }
        problems.undecided.insert(problems.undecided.end(), found.undecided.begin(), found.undecided.end());
    }
    if (!problems.undecided.empty()) return;
    problems.missing.push_back("no libibverbs.so.1 on the library path");
    problems.fixes.emplace_back(
        "use an image with rdma-core's verbs library and providers (Debian/Ubuntu: libibverbs1 and "
        "ibverbs-providers; RHEL: libibverbs), or mount the host's MOFED/DOCA libraries into the container");
}

void check_verbs_providers(const RuleInput& in, const std::vector<std::string>& dirs,
                           const std::vector<const Nic*>& hcas, VerbsProblems& problems) {
    // rdma-core loads providers from <libdir>/libibverbs/lib<name>-rdmav<ABI>.so.
    std::vector<std::string> provider_dirs;
    if (!problems.library.empty())
        provider_dirs.push_back(problems.library.substr(0, problems.library.rfind('/')) + "/libibverbs");
    for (const auto& dir : dirs) provider_dirs.push_back(dir + "/libibverbs");
    std::set<std::string> providers;
    for (const Nic* nic : hcas) {
        std::string provider = verbs_provider(nic->driver, nic->hca);
        if (!provider.empty()) providers.insert(provider);
    }
    std::set<std::string> seen;
    for (const auto& provider : providers) {
        std::string prefix = "lib" + provider + "-rdmav";
        bool found = false;
        for (const auto& dir : provider_dirs) {
            if (!seen.insert(dir + "|" + provider).second) continue;
            for (const auto& name : in.files->list(dir)) {
                if (name.starts_with(prefix) && name.ends_with(".so")) found = true;
            }
            if (found) break;
            // A listing past the check's bound is not "empty" (context/memo_file_view.h).
            if (const FileInfo info = in.files->stat(dir); info.detail.starts_with(kCheckBoundDetail)) {
                problems.undecided.push_back(dir + " (" + info.detail + ")");
                break;
            }
        }
        if (!found) {
            problems.missing.push_back("no " + prefix + "*.so verbs provider for the node's HCAs");
            problems.fixes.emplace_back(
                "install rdma-core's providers in the image (ibverbs-providers, or the "
                "MOFED/DOCA libibverbs and lib" +
                provider + " packages)");
        }
    }
}

void check_uverbs_devices(const RuleInput& in, const std::vector<const Nic*>& hcas, VerbsProblems& problems) {
    std::vector<std::string> absent;
    bool any_named = false;
    for (const Nic* nic : hcas) {
        for (const auto& uverbs : nic->uverbs) {
            any_named = true;
            std::string path = "/dev/infiniband/" + uverbs;
            FileInfo info = in.files->stat(path);
            if (info.kind == FileKind::missing || info.kind == FileKind::dangling_symlink) {
                absent.push_back(path + " (" + nic->hca + ")");
            } else if (info.kind == FileKind::unknown) {
                problems.undecided.push_back(path);
            }
        }
    }
    if (!any_named) {
        // sysfs did not name the devices: any uverbs device will do for the question.
        FileInfo dir = in.files->stat("/dev/infiniband");
        if (dir.kind == FileKind::unknown) {
            problems.undecided.emplace_back("/dev/infiniband");
            return;
        }
        auto names = in.files->list("/dev/infiniband");
        if (std::none_of(names.begin(), names.end(), [](const std::string& n) { return n.starts_with("uverbs"); }))
            absent.emplace_back("/dev/infiniband/uverbs*");
    }
    if (absent.empty()) return;
    problems.missing.push_back("no " + join(absent));
    problems.fixes.emplace_back(
        "pass the RDMA devices into the container: docker/podman --device=/dev/infiniband; enroot/pyxis: mount "
        "/dev/infiniband (enroot's default hooks do when the host has it); Kubernetes: request the RDMA device "
        "plugin's resource (e.g. rdma/ib) for the pod");
}

void check_verbs_missing(const RuleInput& in, RuleOutput& out) {
    if (const nccl::Setting* disable = in.nccl.get("NCCL_IB_DISABLE")) {
        if (auto value = effective_int(*disable); value && *value != 0) return;  // net.ib-disabled
    }
    if (const nccl::Setting* net = in.nccl.get("NCCL_NET")) {
        // Another transport chosen on purpose (a net plugin, sockets); NCCL compares names case-insensitively.
        std::string upper = net->value;
        std::transform(upper.begin(), upper.end(), upper.begin(),
                       [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
        if (upper != "IB") return;
    }
    Condition rdma = node_has_rdma(in);
    Condition multi_node = multi_node_job(in.ctx);
    if (rdma.fails() || multi_node.fails()) return;
    Condition view =
        in.files != nullptr ? Condition::known(true) : Condition::unknown("the task's file view is unknown");
    if (!all_hold(out, "whether the container can open the node's RDMA devices", {rdma, multi_node, view})) return;

    std::vector<std::string> dirs = nccl::loader_dirs(rules::task_env(in), in.files, rules::node_arch(in));
    std::vector<const Nic*> hcas = used_hcas(in);
    VerbsProblems problems;
    check_verbs_library(in, dirs, problems);
    if (!problems.library.empty()) check_verbs_providers(in, dirs, hcas, problems);
    check_uverbs_devices(in, hcas, problems);
    if (problems.missing.empty()) {
        if (!problems.undecided.empty()) {
            out.unknown("cannot tell whether the container can open the node's RDMA devices because " +
                        in.files->describe() + " cannot say whether " + join(problems.undecided) + " exists");
        }
        return;
    }
    Finding& finding = out.fire("this " + std::to_string(*in.ctx.job.nodes) + "-node job runs on " +
                                rdma_description(in) + ", but the container has " + join(problems.missing, "; ") +
                                ": NCCL's IB transport cannot open a device and NCCL falls back to TCP sockets");
    finding.evidence.emplace_back("missing", join(problems.missing, "; "));
    if (!problems.library.empty()) finding.evidence.emplace_back("libibverbs", problems.library);
    std::vector<std::string> hca_names;
    for (const Nic* nic : hcas) {
        hca_names.push_back(nic->hca + (nic->driver.empty() ? "" : " (" + nic->driver + ")") +
                            (nic->uverbs.empty() ? "" : " " + join(nic->uverbs, "/")));
    }
    if (!hca_names.empty()) finding.evidence.emplace_back("hcas", join(hca_names));
    finding.evidence.emplace_back("job_nodes", std::to_string(*in.ctx.job.nodes));
    add_rdma_evidence(finding, in);
    finding.evidence.emplace_back("searched", join(dirs, ":"));
    finding.evidence.emplace_back("container_view", in.files->describe());
    rules::add_container_evidence(finding, in.ctx);
    for (auto& fix : problems.fixes) finding.remediation.push_back(RemediationOp::manual_step(std::move(fix)));
}

const TableRule kVerbsMissing{
    RuleInfo{
        .id = "net.verbs-missing",
        .title = "Container cannot open the node's RDMA devices",
        .default_action = Action::block,
        .severity = Severity::error,
        .scopes = kScopeLive | kScopeCli,
        .checks = "A multi-node job on a node with ACTIVE IB/RoCE ports (or a profile that declares RDMA NICs), "
                  "unless `NCCL_IB_DISABLE` is set or `NCCL_NET` names another transport. In the container's view: "
                  "`libibverbs.so` or `libibverbs.so.1` (or `NCCL_IBVERBS_LIB`) along the loader's path; the "
                  "rdma-core provider for the kernel driver of each HCA NCCL will use (`mlx5_core` → "
                  "`libibverbs/libmlx5-rdmav*.so`); and the `/dev/infiniband/uverbsN` device of each of those "
                  "HCAs, as sysfs names them (`/sys/class/infiniband/<hca>/device/infiniband_verbs`).",
        .why = "NCCL loads libibverbs with dlopen (buildIbvSymbols, src/misc/ibvsymbols.cc) and opens each HCA "
               "through its uverbs device. An image without rdma-core, without the provider for the HCA, or a "
               "runtime that did not pass /dev/infiniband gives NCCL no IB device; it logs \"NET/IB : No device "
               "found\" at INFO and runs over TCP sockets, at a fraction of the fabric's bandwidth.",
        .evidence = "What is missing, the libibverbs found, the HCAs with their drivers and uverbs devices, the "
                    "directories searched and the container view.",
        .fix = "Use an image with rdma-core's libibverbs and providers (or mount the host's MOFED/DOCA libraries), "
               "and pass `/dev/infiniband` into the container (`--device=/dev/infiniband`, enroot's device mount, "
               "the RDMA device plugin's resource in Kubernetes).",
    },
    check_verbs_missing};

// ---------------------------------------------------------------------------
// net.imex-channel-missing

// ncclMnnvlCheck (src/mnnvl.cc) allocates FABRIC-handle memory, which needs an
// IMEX channel device. Multi-node NVLink arrived in NCCL 2.20.3; up to 2.26 a
// failed allocation silently left MNNVL off, from 2.27.3 it fails init.
constexpr nccl::Version kMnnvlFirst{2, 20, 3};
constexpr nccl::Version kMnnvlFatal{2, 27, 3};

void check_imex_channel_missing(const RuleInput& in, RuleOutput& out) {
    if (!in.profile.node.mnnvl) return;
    // init.cc: MNNVL is checked when nNodes > 1 and NCCL_MNNVL_ENABLE != 0, or when it is 1.
    std::optional<long long> enable;
    if (const nccl::Setting* setting = in.nccl.get("NCCL_MNNVL_ENABLE")) enable = effective_int(*setting);
    if (enable && *enable == 0) return;
    Condition multi_node = enable && *enable == 1 ? Condition::known(true) : multi_node_job(in.ctx);
    Condition view =
        in.files != nullptr ? Condition::known(true) : Condition::unknown("the task's file view is unknown");
    if (!all_hold(out, "whether NCCL can use multi-node NVLink", {multi_node, view})) return;

    constexpr std::string_view kDir = "/dev/nvidia-caps-imex-channels";
    FileInfo dir = in.files->stat(kDir);
    if (dir.kind == FileKind::unknown) {
        out.unknown("cannot tell whether the container has an IMEX channel because " + in.files->describe() +
                    " cannot say whether " + std::string(kDir) + " exists");
        return;
    }
    std::vector<std::string> channels;
    for (const auto& name : in.files->list(kDir)) {
        if (name.starts_with("channel")) channels.push_back(name);
    }
    if (!channels.empty()) return;

    std::string where;
    auto version = rules::image_nccl_version(in, where);
    if (version && *version < kMnnvlFirst) {
        out.unknown("does not apply: NCCL " + version->to_string() + " in the image (" + where +
                    ") predates multi-node NVLink (2.20.3) and never uses IMEX channels");
        return;
    }
    std::string consequence;
    if (!version) {
        consequence =
            "NCCL 2.27.3 and later fail communicator init (\"MNNVL ... is available but not working on this "
            "system. Check the IMEX channel configuration\"); earlier versions silently use the network "
            "instead of NVLink across nodes";
    } else if (*version >= kMnnvlFatal) {
        consequence = "NCCL " + version->to_string() +
                      " fails communicator init (\"MNNVL ... is available but not working on this system. Check the "
                      "IMEX channel configuration\")";
    } else {
        consequence = "NCCL " + version->to_string() +
                      " silently skips multi-node NVLink and sends inter-node traffic over the network";
    }
    Finding& finding = out.fire("profile " + in.profile.name +
                                " is a multi-node NVLink class, but the container has "
                                "no IMEX channel (" +
                                std::string(kDir) + "/channelN): " + consequence);
    finding.evidence.emplace_back("imex_channels", std::string(kDir) + " " + std::string(to_string(dir.kind)));
    finding.evidence.emplace_back("nccl_version",
                                  version ? version->to_string() + " (" + where + ")" : "unknown: " + where);
    if (in.ctx.job.nodes) finding.evidence.emplace_back("job_nodes", std::to_string(*in.ctx.job.nodes));
    rules::add_container_evidence(finding, in.ctx);
    finding.remediation.push_back(RemediationOp::manual_step(
        "run nvidia-imex on the nodes and give the container a channel: NVIDIA_IMEX_CHANNELS=0 with the NVIDIA "
        "container toolkit, or a bind of /dev/nvidia-caps-imex-channels/channel0; in Kubernetes, a ComputeDomain "
        "of the NVIDIA DRA driver"));
}

const TableRule kImexChannelMissing{
    RuleInfo{
        .id = "net.imex-channel-missing",
        .title = "No IMEX channel in a multi-node NVLink container",
        .default_action = Action::block,
        .severity = Severity::error,
        .scopes = kScopeLive | kScopeCli,
        .checks = "On a profile with `node.mnnvl: true` (GB200/GB300 NVL72), a job NCCL checks multi-node NVLink "
                  "for (more than one node and `NCCL_MNNVL_ENABLE` not 0, or `NCCL_MNNVL_ENABLE=1`) whose container "
                  "shows no `/dev/nvidia-caps-imex-channels/channelN`. The NCCL in the image decides the message: "
                  "before 2.20.3 the rule does not apply and says so.",
        .why = "NCCL shares memory across the NVLink domain through FABRIC handles, which need an IMEX channel "
               "(ncclMnnvlCheck, src/mnnvl.cc). Without one, NCCL 2.20-2.26 silently left multi-node NVLink off and "
               "used the network — a fraction of NVLink's bandwidth — and NCCL 2.27.3 and later fail init.",
        .evidence = "The IMEX channel directory as the container sees it, the NCCL version in the image and where it "
                    "was read, the job's node count.",
        .fix = "Run nvidia-imex on the nodes and give the container a channel (`NVIDIA_IMEX_CHANNELS=0` with the "
               "NVIDIA container toolkit, a bind of `/dev/nvidia-caps-imex-channels/channel0`, or a ComputeDomain "
               "of the NVIDIA DRA driver in Kubernetes); `NCCL_MNNVL_ENABLE=0` only where NVLink across nodes is "
               "not wanted.",
    },
    check_imex_channel_missing};
}  // namespace

void register_network_rules(std::vector<const Rule*>& rules) {
    rules.push_back(&kHcaMatchesNothing);
    rules.push_back(&kIbDisabled);
    rules.push_back(&kFallbackUnguarded);
    rules.push_back(&kPluginMissing);
    rules.push_back(&kQpsLow);
    rules.push_back(&kSocketIfnameNomatch);
    rules.push_back(&kIbPortDegraded);
    rules.push_back(&kGdrLevelLow);
    rules.push_back(&kGdrReadOff);
    rules.push_back(&kGdrUnavailable);
    rules.push_back(&kVerbsMissing);
    rules.push_back(&kImexChannelMissing);
}

}  // namespace launchguard
