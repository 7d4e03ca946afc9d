// net.*: does NCCL reach the fabric the node was built with? Most of these
// mistakes are silent: NCCL falls back to TCP sockets or stages through host
// memory and logs it only at INFO (ncclIbInitDevices in NCCL's
// src/transport/net_ib/init.cc, ncclNetInit in src/plugin/net.cc,
// ncclTopoCheckGdr in src/graph/paths.cc).
//
// This file: which transport NCCL takes (HCA filter, IB disabled, the
// fallback and net plugins, QPs, socket interfaces) and the family's
// registration; network_link_rules.cpp and network_device_rules.cpp hold
// the other sub-families, network_ports.h what they share.
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
#include "rules/network_ports.h"
#include "rules/rule_helpers.h"
#include "rules/table_rule.h"
#include "util/text.h"

namespace launchguard {
namespace {

using net_rules::active_hcas;
using net_rules::active_ports;
using net_rules::add_rdma_evidence;
using net_rules::is_active;
using net_rules::multi_node_job;
using net_rules::node_has_rdma;
using net_rules::port_name;
using net_rules::rdma_description;
using rules::add_setting_evidence;
using rules::all_hold;
using rules::Condition;
using rules::effective_int;
using rules::format_number;
using rules::join;
using rules::restore_default;
using rules::setting_or_unknown;

constexpr std::string_view kDefaultNet = "IB";
constexpr long long kDefaultQpsPerConnection = 1;  // NCCL_PARAM(IbQpsPerConn, ...), net_ib/connect.cc

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

LibraryLookup find_library(const FileView& files, const nccl::LoaderDirs& dirs,
                           const std::vector<std::string>& file_names) {
    LibraryLookup lookup;
    bool over_bound = false;
    bool named_not_searched = false;
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
        for (const auto& dir : dirs.dirs) {
            // Most loader directories do not exist in a given image. Asking
            // for the file alone costs nothing more then (a view remembers
            // the directories on the way: rooted_file_view.h), while a look
            // at the directory itself also opens it to check it is readable.
            if (probe(dir + "/" + file)) {
                lookup.found = dir + "/" + file;
                return lookup;
            }
        }
        // The directories past nccl::loader_dirs' bound may hold it.
        if (!dirs.not_searched.empty() && !named_not_searched) {
            lookup.undecided.push_back(dirs.not_searched);
            named_not_searched = true;
        }
    }
    for (const auto& file : file_names) {
        if (file.find('/') != std::string::npos) continue;
        for (auto dir : kPluginInstallDirs) {
            std::string path = std::string(dir) + "/" + file;
            if (std::find(dirs.dirs.begin(), dirs.dirs.end(), dir) == dirs.dirs.end() &&
                files.stat(path).kind == FileKind::regular) {
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

    const nccl::LoaderDirs dirs = nccl::loader_dirs(rules::task_env(in), in.files, rules::node_arch(in));
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
    finding.evidence.emplace_back("searched", join(dirs.dirs, ":"));
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

constexpr IntegerParameter<int> kQpsMin{"nccl.qps_per_connection.min", 4, 1, 128,
                                        "the fewest queue pairs per connection, the value the patch sets"};
constexpr IntegerParameter<int> kQpsMinTotalGpus{"nccl.qps_per_connection.min_total_gpus", 512, 0, 1 << 24,
                                                 "for jobs of at least this many GPUs"};
constexpr NumberParameter kQpsMinLinkGbps{"nccl.qps_per_connection.min_link_gbps", 800, 0, 1e6,
                                          "on nodes whose ports run at least this fast"};
constexpr auto kQpsFields = parameter_list(kQpsMin, kQpsMinTotalGpus, kQpsMinLinkGbps);
constexpr ParameterGroup kQps{"nccl.qps_per_connection", kQpsFields, "when the fabric needs more queue pairs"};
constexpr auto kQpsLowParameters = parameter_list(kQps);

void check_qps_low(const RuleInput& in, RuleOutput& out) {
    if (!kQps.in(in.profile)) return;
    const struct {
        int min, min_total_gpus;
        double min_link_gbps;
    } qps{kQpsMin.in(in.profile), kQpsMinTotalGpus.in(in.profile), kQpsMinLinkGbps.in(in.profile)};
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
        .parameters = kQpsLowParameters,
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
}  // namespace

void register_network_rules(std::vector<const Rule*>& rules) {
    rules.push_back(&kHcaMatchesNothing);
    rules.push_back(&kIbDisabled);
    rules.push_back(&kFallbackUnguarded);
    rules.push_back(&kPluginMissing);
    rules.push_back(&kQpsLow);
    rules.push_back(&kSocketIfnameNomatch);
    net_rules::register_network_link_rules(rules);
    net_rules::register_network_device_rules(rules);
}

}  // namespace launchguard
