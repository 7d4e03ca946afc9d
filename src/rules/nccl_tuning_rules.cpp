// nccl.*: settings that switch NCCL's fast paths off or pin its tuning. Each
// is legal, none prints anything with the default NCCL_DEBUG, and each costs
// bandwidth on hardware that has the path (NCCL's env.rst; the defaults are
// the NCCL_PARAM declarations in its source, e.g. src/transport/nvls.cc and
// src/misc/cudawrap.cc; ncclMnnvlCheck in src/mnnvl.cc needs P2P and cuMem).
#include <algorithm>
#include <cctype>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "rules/families.h"
#include "rules/rule_helpers.h"
#include "rules/table_rule.h"

namespace launchguard {
namespace {

using rules::add_setting_evidence;
using rules::all_hold;
using rules::Condition;
using rules::effective_int;
using rules::join;
using rules::restore_default;
using rules::setting_or_unknown;

constexpr long long kMaxChannels = 64;             // MAXCHANNELS, src/include/device.h
constexpr long long kDefaultBuffSize = 4LL << 20;  // DEFAULT_BUFFSIZE, init.cc
constexpr long long kParamAuto = -2;               // NCCL_PARAM's "not set" default for these knobs

// ---------------------------------------------------------------------------
// What the node has.

// How many GPUs share this node: its topology, else the profile.
Condition node_has_several_gpus(const RuleInput& in) {
    if (in.ctx.topology) return Condition::known(in.ctx.topology->gpus.size() > 1);
    const auto& node = in.profile.node;
    if (node.gpus) return Condition::known(*node.gpus > 1);
    if (node.nvswitch || node.mnnvl) return Condition::known(true);
    return Condition::unknown("the node topology is unknown (" + in.ctx.topology.reason() + ") and profile '" +
                              in.profile.name + "' does not give node.gpus");
}

void add_gpu_evidence(Finding& finding, const RuleInput& in) {
    if (in.ctx.topology) {
        finding.evidence.emplace_back("node_gpus", std::to_string(in.ctx.topology->gpus.size()));
        finding.evidence.emplace_back("topology", in.ctx.topology->source);
    } else if (in.profile.node.gpus) {
        finding.evidence.emplace_back("profile_gpus", std::to_string(*in.profile.node.gpus));
    }
}

std::string gpus_description(const RuleInput& in) {
    if (in.ctx.topology) return "the " + std::to_string(in.ctx.topology->gpus.size()) + " GPUs of this node";
    if (in.profile.node.gpus)
        return "the " + std::to_string(*in.profile.node.gpus) + " GPUs per node of profile '" + in.profile.name + "'";
    return "the GPUs of this NVLink node";
}

// ---------------------------------------------------------------------------
// nccl.p2p-disabled

// ncclGetLevel (graph/paths.cc): NCCL_P2P_DISABLE counts only when strtol
// reads exactly 1; otherwise NCCL_P2P_LEVEL=LOC (or legacy 0) does the same.
const nccl::Setting* p2p_switch_off(const RuleInput& in, RuleOutput& out) {
    const nccl::Setting* disable = setting_or_unknown(in, out, "NCCL_P2P_DISABLE", "whether CUDA P2P is disabled");
    if (disable != nullptr && nccl::parse_int(disable->value).value == 1) return disable;
    const nccl::Setting* level = setting_or_unknown(in, out, "NCCL_P2P_LEVEL", "whether CUDA P2P is disabled");
    if (level != nullptr && rules::parse_path_level(level->value) == rules::kPathLoc) return level;
    return nullptr;
}

void check_p2p_disabled(const RuleInput& in, RuleOutput& out) {
    const nccl::Setting* off = p2p_switch_off(in, out);
    if (off == nullptr) return;
    bool mnnvl = in.profile.node.mnnvl;
    if (!mnnvl && !all_hold(out, "whether " + off->name + "=" + off->value + " costs NVLink/PCIe bandwidth",
                            {node_has_several_gpus(in)})) {
        return;
    }
    std::string message = off->name + "=" + off->value + " turns CUDA P2P off between " + gpus_description(in) +
                          ": intra-node traffic goes through host memory instead of NVLink/PCIe peer access";
    if (mnnvl) message += ", and multi-node NVLink is off too (ncclMnnvlCheck requires P2P)";
    Finding& finding = out.fire(std::move(message));
    add_setting_evidence(finding, *off);
    add_gpu_evidence(finding, in);
    if (mnnvl) finding.evidence.emplace_back("profile_mnnvl", "true");
    finding.remediation = restore_default(*off, off->name == "NCCL_P2P_DISABLE" ? "0" : "");
}

const TableRule kP2pDisabled{
    RuleInfo{
        .id = "nccl.p2p-disabled",
        .title = "CUDA P2P disabled on a multi-GPU node",
        .default_action = Action::warn,
        .severity = Severity::warning,
        .scopes = kScopeLive | kScopeKubernetes | kScopeCli,
        .nccl_only = true,
        .checks = "`NCCL_P2P_DISABLE` reads as exactly 1 (NCCL ignores any other number), or `NCCL_P2P_LEVEL` is "
                  "`LOC` / `0`, on a node with more than one GPU (its topology, else the profile) or on a multi-node "
                  "NVLink profile.",
        .why = "Without P2P, GPUs of the same node exchange data through host memory (the SHM transport) instead of "
               "NVLink or PCIe peer access — a large intra-node bandwidth loss, silently. On GB200/GB300 NVL72 it also "
               "disables MNNVL: ncclMnnvlCheck requires P2P, so cross-tray traffic goes over the NICs.",
        .evidence = "The variable and value, where it was set, and the node's GPU count (or the profile's).",
        .fix = "Unset the variable. From a conf file, the environment overrides it (`NCCL_P2P_DISABLE=0`, or an "
               "empty `NCCL_P2P_LEVEL`, which NCCL ignores) until the line is removed.",
    },
    check_p2p_disabled};

// ---------------------------------------------------------------------------
// nccl.shm-disabled

void check_shm_disabled(const RuleInput& in, RuleOutput& out) {
    const nccl::Setting* shm = setting_or_unknown(in, out, "NCCL_SHM_DISABLE", "whether the SHM transport is disabled");
    if (shm == nullptr) return;
    if (effective_int(*shm) != 1) return;  // shm.cc: `if (ncclParamShmDisable() == 1)`
    if (!all_hold(out, "whether NCCL_SHM_DISABLE=" + shm->value + " matters on this node",
                  {node_has_several_gpus(in)})) {
        return;
    }
    Finding& finding = out.fire("NCCL_SHM_DISABLE=" + shm->value + " removes the shared-memory transport between " +
                                gpus_description(in) +
                                ": GPU pairs that cannot use P2P (e.g. across CPU sockets) "
                                "send through the network instead");
    add_setting_evidence(finding, *shm);
    add_gpu_evidence(finding, in);
    finding.remediation = restore_default(*shm, "0");
}

const TableRule kShmDisabled{
    RuleInfo{
        .id = "nccl.shm-disabled",
        .title = "Shared-memory transport disabled",
        .default_action = Action::warn,
        .severity = Severity::warning,
        .scopes = kScopeLive | kScopeKubernetes | kScopeCli,
        .nccl_only = true,
        .checks = "`NCCL_SHM_DISABLE` reads as exactly 1 (NCCL ignores other numbers) on a node with more than one "
                  "GPU (its topology, else the profile).",
        .why = "SHM is NCCL's intra-node path for GPU pairs without P2P (PCIe across CPU sockets, P2P disabled, some "
               "VMs). Without it those pairs go through the NIC and the switch and back, silently, at network speed.",
        .evidence = "The value, where it was set, and the node's GPU count (or the profile's).",
        .fix = "Unset `NCCL_SHM_DISABLE`. From a conf file, the environment overrides it with `NCCL_SHM_DISABLE=0` "
               "until the line is removed. If /dev/shm is too small, fix that instead (shm.small).",
    },
    check_shm_disabled};

// ---------------------------------------------------------------------------
// nccl.nvls-disabled

void check_nvls_disabled(const RuleInput& in, RuleOutput& out) {
    const nccl::Setting* nvls = setting_or_unknown(in, out, "NCCL_NVLS_ENABLE", "whether NVLink SHARP is disabled");
    if (nvls == nullptr) return;
    if (effective_int(*nvls) != 0) return;  // nvls.cc: `if (!ncclParamNvlsEnable() || gpuCount < 2)`
    Condition nvswitch = Condition::unknown(
        "profile '" + in.profile.name + "' does not declare node.nvswitch and launchguard does not detect NVSwitches");
    if (in.profile.node.nvswitch) {
        nvswitch = Condition::known(true);
    } else if (in.ctx.topology && in.ctx.topology->gpus.size() < 2) {
        nvswitch = Condition::known(false);  // NCCL never uses NVLS with one GPU
    }
    if (!all_hold(out, "whether NCCL_NVLS_ENABLE=" + nvls->value + " costs NVLink SHARP bandwidth", {nvswitch})) return;
    Finding& finding = out.fire("NCCL_NVLS_ENABLE=" + nvls->value +
                                " turns NVLink SHARP off on an NVSwitch node of "
                                "profile '" +
                                in.profile.name +
                                "': NVLS/NVLSTree algorithms are never used and "
                                "all-reduce loses the switch offload");
    add_setting_evidence(finding, *nvls);
    finding.evidence.emplace_back("parsed", std::to_string(*effective_int(*nvls)));
    finding.evidence.emplace_back("profile_nvswitch", "true");
    finding.remediation = restore_default(*nvls, "2");
}

const TableRule kNvlsDisabled{
    RuleInfo{
        .id = "nccl.nvls-disabled",
        .title = "NVLink SHARP disabled on an NVSwitch node",
        .default_action = Action::warn,
        .severity = Severity::warning,
        .scopes = kScopeLive | kScopeKubernetes | kScopeCli,
        .nccl_only = true,
        .checks = "`NCCL_NVLS_ENABLE` reads as 0 under strtoll (`0`, `off`, `false`) on a node whose profile declares "
                  "NVSwitch (`node.nvswitch`). Unknown when the profile does not say and the node has several GPUs.",
        .why = "NVLS offloads reductions to the NVSwitch (H100/H200 HGX, B200/B300, GB200/GB300); with it off, NCCL "
               "falls back to ring/tree for all-reduce and all-gather, with lower bandwidth and no message. Some "
               "stacks set it to 0 on purpose (GKE TCPXO): override this rule in their profile.",
        .evidence = "The value, where it was set, the value NCCL parses, and that the profile declares NVSwitch.",
        .fix = "Unset `NCCL_NVLS_ENABLE`. From a conf file, the environment overrides it with `NCCL_NVLS_ENABLE=2` "
               "(NCCL's default) until the line is removed.",
    },
    check_nvls_disabled};

// ---------------------------------------------------------------------------
// nccl.cumem-disabled

void check_cumem_disabled(const RuleInput& in, RuleOutput& out) {
    const nccl::Setting* cumem = setting_or_unknown(in, out, "NCCL_CUMEM_ENABLE", "whether cuMem is disabled");
    if (cumem == nullptr) return;
    auto value = effective_int(*cumem);
    // ncclCuMemEnable (misc/cudawrap.cc): a non-negative value is taken as
    // is; below zero only -2 means "auto", so -1 disables as well.
    if (!value || *value > 0 || *value == kParamAuto) return;
    bool mnnvl = in.profile.node.mnnvl;
    std::string message = "NCCL_CUMEM_ENABLE=" + cumem->value + " turns NCCL's cuMem allocations off";
    if (mnnvl) {
        message += ": on this multi-node NVLink system (profile '" + in.profile.name +
                   "') MNNVL is silently off and "
                   "cross-tray traffic goes over the NICs";
    } else {
        message += ": symmetric-memory kernels and NCCL's device API are unavailable";
    }
    Finding& finding = out.fire(std::move(message));
    add_setting_evidence(finding, *cumem);
    finding.evidence.emplace_back("parsed", std::to_string(*value));
    finding.evidence.emplace_back("profile_mnnvl", mnnvl ? "true" : "false");
    if (mnnvl) finding.action = Action::block;
    finding.remediation = restore_default(*cumem, "-2");
}

const TableRule kCumemDisabled{
    RuleInfo{
        .id = "nccl.cumem-disabled",
        .title = "cuMem disabled (MNNVL off on NVL72)",
        .default_action = Action::warn,
        .severity = Severity::warning,
        .scopes = kScopeLive | kScopeKubernetes | kScopeCli,
        .nccl_only = true,
        .checks = "`NCCL_CUMEM_ENABLE` reads as 0 (or any negative number but -2, NCCL's \"auto\"). Blocks on "
                  "profiles with `node.mnnvl` (GB200/GB300 NVL72); warns elsewhere.",
        .why = "Multi-node NVLink needs cuMem: ncclMnnvlCheck returns early when it is off, so MNNVL is disabled "
               "without a word and traffic between trays of the NVLink domain goes over InfiniBand. Elsewhere cuMem "
               "off loses NCCL's symmetric-memory kernels and device API (both require it); it is sometimes set as a "
               "workaround for cuMem IPC problems in containers, which is why it only warns there.",
        .evidence = "The value, where it was set, the value NCCL parses, and whether the profile is multi-node NVLink.",
        .fix = "Unset `NCCL_CUMEM_ENABLE` (NCCL enables cuMem automatically when the driver supports it). From a conf "
               "file, the environment overrides it with `-2` (auto) until the line is removed.",
    },
    check_cumem_disabled};

// ---------------------------------------------------------------------------
// nccl.algo-restricted, nccl.proto-restricted

// "NCCL_ALGO=Ring allows only Ring: NCCL's tuner can no longer pick Tree, ..."
// for a value in NCCL's parseList syntax (graph/tuning.cc): the names the
// value takes away are those it lists, so a value that keeps a CollNet
// algorithm never says CollNet is gone.
std::string describe_restriction(std::string_view value, const std::vector<std::string_view>& names,
                                 std::string_view what_is_lost) {
    auto choice = nccl::parse_list(value, names);
    if (!choice) {
        return "sets per-collective lists (" + std::string(value) +
               "): for the collectives it names, NCCL's tuner picks only from those lists" + std::string(what_is_lost);
    }
    std::string out =
        value.starts_with('^') ? "excludes " + join(choice->disabled) : "allows only " + join(choice->enabled);
    if (choice->enabled.empty()) out = "leaves no choice";
    if (!choice->ignored.empty()) out += " (NCCL ignores " + join(choice->ignored) + ", which names none)";
    if (choice->disabled.empty()) return out + ": NCCL's tuner keeps every choice";
    return out + ": NCCL's tuner can no longer pick " + join(choice->disabled) + std::string(what_is_lost);
}

void fire_restriction(const RuleInput& in, RuleOutput& out, std::string_view name,
                      const std::vector<std::string_view>& names, std::string_view what_is_lost) {
    const nccl::Setting* setting = setting_or_unknown(in, out, name, "whether " + std::string(name) + " is set");
    // An empty value gives parseList nothing to change: every choice stays enabled.
    if (setting == nullptr || setting->value.empty()) return;
    auto choice = nccl::parse_list(setting->value, names);
    // A list that names every choice, or excludes only names NCCL does not know, restricts nothing.
    if (choice && choice->disabled.empty()) return;
    Finding& finding = out.fire(std::string(name) + "=" + setting->value + " " +
                                describe_restriction(setting->value, names, what_is_lost));
    add_setting_evidence(finding, *setting);
    finding.remediation = restore_default(*setting, "");
}

void check_algo_restricted(const RuleInput& in, RuleOutput& out) {
    fire_restriction(in, out, "NCCL_ALGO", {nccl::kAlgorithms.begin(), nccl::kAlgorithms.end()},
                     " per collective and message size");
}

void check_proto_restricted(const RuleInput& in, RuleOutput& out) {
    fire_restriction(in, out, "NCCL_PROTO", {nccl::kProtocols.begin(), nccl::kProtocols.end()},
                     " per message size, which costs latency or bandwidth");
}

const TableRule kAlgoRestricted{
    RuleInfo{
        .id = "nccl.algo-restricted",
        .title = "NCCL_ALGO restricts collective algorithms",
        .default_action = Action::warn,
        .severity = Severity::warning,
        .scopes = kScopeLive | kScopeKubernetes | kScopeCli,
        .nccl_only = true,
        .checks = "The effective `NCCL_ALGO` takes an algorithm away from NCCL's tuner, read as NCCL's parseList "
                  "does (names Tree, Ring, CollNetDirect, CollNetChain, NVLS, NVLSTree, PAT, any case; `^` "
                  "excludes). The message names the algorithms that can no longer be picked. Quiet for an empty "
                  "value or one that lists every algorithm.",
        .why = "NCCL chooses the algorithm (Ring, Tree, NVLS, NVLSTree, CollNetDirect, CollNetChain, PAT) per "
               "collective and size from "
               "the topology. A fixed list — often left over from a benchmark or a bug workaround — overrides that "
               "choice everywhere. The NCCL docs list it among the debugging variables that \"should generally not be "
               "set for production code\"; since 2.24 a collective the list leaves without a usable algorithm fails "
               "instead of falling back to Ring.",
        .evidence = "The value and where it was set.",
        .fix = "Unset `NCCL_ALGO`. From a conf file, the environment overrides it with an empty value (which NCCL "
               "treats as no restriction) until the line is removed.",
    },
    check_algo_restricted};

const TableRule kProtoRestricted{
    RuleInfo{
        .id = "nccl.proto-restricted",
        .title = "NCCL_PROTO restricts protocols",
        .default_action = Action::warn,
        .severity = Severity::warning,
        .scopes = kScopeLive | kScopeKubernetes | kScopeCli,
        .nccl_only = true,
        .checks = "The effective `NCCL_PROTO` takes a protocol (LL, LL128, Simple; any case; `^` excludes) away "
                  "from NCCL's tuner, read as NCCL's parseList does. Quiet for an empty value or one that lists "
                  "every protocol.",
        .why = "NCCL picks LL (small messages), LL128 and Simple (large messages) per size. Pinning them costs "
               "latency or bandwidth; the NCCL docs discourage setting it except to rule out a suspected protocol "
               "bug, and forcing LL128 where it is unsupported can corrupt data.",
        .evidence = "The value and where it was set.",
        .fix = "Unset `NCCL_PROTO`. From a conf file, the environment overrides it with an empty value until the line "
               "is removed.",
    },
    check_proto_restricted};

// ---------------------------------------------------------------------------
// nccl.channels-capped

// The channel cap one variable puts on NCCL, if any. ncclMaxNchannels
// (graph/connect.cc) raises values below 1 to 1; NCCL_MAX_CTAS <= 0 is
// ignored (init.cc).
std::optional<long long> channel_cap(std::string_view name, long long value) {
    if (name == "NCCL_MAX_CTAS") {
        if (value <= 0) return std::nullopt;
        return value < kMaxChannels ? std::optional<long long>(value) : std::nullopt;
    }
    if (value == kParamAuto) return std::nullopt;
    long long cap = std::max(1LL, value);
    return cap < kMaxChannels ? std::optional<long long>(cap) : std::nullopt;
}

void check_channels_capped(const RuleInput& in, RuleOutput& out) {
    // NCCL_MAX_NCHANNELS replaces the legacy NCCL_MAX_NRINGS when both are set.
    const nccl::Setting* nchannels =
        setting_or_unknown(in, out, "NCCL_MAX_NCHANNELS", "whether NCCL's channels are capped");
    bool nchannels_in_effect = nchannels != nullptr && effective_int(*nchannels).value_or(kParamAuto) != kParamAuto;
    std::vector<std::string_view> names{"NCCL_MAX_NCHANNELS", "NCCL_MAX_CTAS"};
    if (!nchannels_in_effect) names.insert(names.begin() + 1, "NCCL_MAX_NRINGS");
    for (std::string_view name : names) {
        const nccl::Setting* setting = name == "NCCL_MAX_NCHANNELS"
                                           ? nchannels
                                           : setting_or_unknown(in, out, name, "whether NCCL's channels are capped");
        if (setting == nullptr) continue;
        auto value = effective_int(*setting);
        if (!value) continue;
        auto cap = channel_cap(name, *value);
        if (!cap) continue;
        std::string shown = std::to_string(*value) == setting->value
                                ? setting->value
                                : setting->value + " (read as " + std::to_string(*value) + ")";
        Finding& finding =
            out.fire(std::string(name) + "=" + shown + " caps NCCL at " + std::to_string(*cap) + " channel" +
                     (*cap == 1 ? "" : "s") + " (it may use up to " + std::to_string(kMaxChannels) +
                     "): large collectives cannot drive every NVLink "
                     "and NIC at full bandwidth");
        add_setting_evidence(finding, *setting);
        finding.evidence.emplace_back("channel_cap", std::to_string(*cap));
        finding.remediation = restore_default(*setting, name == "NCCL_MAX_CTAS" ? "" : "-2");
    }
}

const TableRule kChannelsCapped{
    RuleInfo{
        .id = "nccl.channels-capped",
        .title = "NCCL channels capped",
        .default_action = Action::warn,
        .severity = Severity::warning,
        .scopes = kScopeLive | kScopeKubernetes | kScopeCli,
        .nccl_only = true,
        .checks = "`NCCL_MAX_NCHANNELS` (or the legacy `NCCL_MAX_NRINGS` when it is not set) or `NCCL_MAX_CTAS` "
                  "caps NCCL below its 64 channels. Values below 1 count as 1 for the channel variables (NCCL raises "
                  "them); `NCCL_MAX_CTAS` <= 0 is ignored by NCCL.",
        .why = "Each channel is a CTA driving its share of the NVLinks and NICs; NCCL sizes the count from the "
               "topology. A low cap — often copied from a tuning note for another system — limits bandwidth of "
               "large collectives without any message. NCCL 2.17 deprecated the NCHANNELS variables in favour of "
               "NCCL_MIN_CTAS/NCCL_MAX_CTAS.",
        .evidence = "The variable, its value and where it was set, and the resulting channel cap.",
        .fix = "Unset the variable. To leave SMs to compute kernels on purpose, use NCCL_MAX_CTAS in the job's own "
               "config and turn this rule off in its profile. From a conf file, the environment overrides it with "
               "NCCL's default until the line is removed.",
    },
    check_channels_capped};

// ---------------------------------------------------------------------------
// nccl.buffsize-suspicious

// The byte count the author meant, when the value carries a size suffix
// NCCL does not understand ("8M" -> 8388608), from the conf linter.
std::optional<long long> meant_bytes(const nccl::Setting& setting) {
    for (const auto& issue : nccl::lint_value(setting.origin, 0, setting.name, setting.value)) {
        auto equals = issue.corrected.find('=');
        if (equals == std::string::npos) continue;
        nccl::IntValue meant = nccl::parse_int(std::string_view(issue.corrected).substr(equals + 1));
        if (meant.complete && !meant.overflow) return meant.value;
    }
    return std::nullopt;
}

void check_buffsize_suspicious(const RuleInput& in, RuleOutput& out) {
    const nccl::Setting* buffsize = setting_or_unknown(in, out, "NCCL_BUFFSIZE", "how large NCCL's buffers are");
    if (buffsize == nullptr) return;
    auto value = effective_int(*buffsize);
    // Unset, empty, -2 or an overflow: NCCL keeps its 4 MiB default. A value
    // that reads as intended despite trailing text ("8388608 # x") is
    // conf.lint's business, not a small buffer.
    if (!value || *value == kParamAuto || *value >= kDefaultBuffSize) return;

    bool partial = !nccl::parse_int(buffsize->value).complete;
    std::string message =
        "NCCL_BUFFSIZE=" + buffsize->value + " is read by NCCL as " + std::to_string(*value) + " bytes";
    if (partial) message += " (strtoll stops at the first character that is not part of a number)";
    message += ", below the 4 MiB (4194304-byte) default: fewer bytes in flight per step, lower bandwidth";
    Finding& finding = out.fire(std::move(message));
    add_setting_evidence(finding, *buffsize);
    finding.evidence.emplace_back("parsed_bytes", std::to_string(*value));
    finding.evidence.emplace_back("default_bytes", std::to_string(kDefaultBuffSize));
    if (auto meant = meant_bytes(*buffsize)) {
        // Keep what the author asked for, in a form NCCL reads.
        finding.evidence.emplace_back("meant_bytes", std::to_string(*meant));
        finding.remediation.push_back(RemediationOp::set_env("NCCL_BUFFSIZE", std::to_string(*meant)));
    } else {
        finding.remediation = restore_default(*buffsize, "-2");
    }
}

const TableRule kBuffsizeSuspicious{
    RuleInfo{
        .id = "nccl.buffsize-suspicious",
        .title = "NCCL_BUFFSIZE below default or unparsable",
        .default_action = Action::warn,
        .severity = Severity::warning,
        .scopes = kScopeLive | kScopeKubernetes | kScopeCli,
        .nccl_only = true,
        .checks = "The effective `NCCL_BUFFSIZE` as NCCL reads it (strtoll, base auto-detected) is below the 4 MiB "
                  "default — written small, or with a size suffix or text strtoll stops at (`8M` is 8 bytes, `four` "
                  "is 0).",
        .why = "NCCL_BUFFSIZE is a byte count and NCCL does not understand suffixes: `8M` gives 8-byte buffers and "
               "`four` gives 0, silently (the parse error is never reported). Buffers smaller than the default keep "
               "fewer bytes in flight per pipeline step and lower bandwidth.",
        .evidence = "The value and where it was set, the byte count NCCL uses, the default, and the byte count the "
                    "author meant when the value had a size suffix.",
        .fix = "Write the size in bytes (`NCCL_BUFFSIZE=8388608`), or unset it to get the 4 MiB default. A value with "
               "a size suffix is rewritten to the bytes it meant; others are unset (from a conf file, overridden "
               "with `-2`, NCCL's default, until the line is removed).",
    },
    check_buffsize_suspicious};

// ---------------------------------------------------------------------------
// nccl.debug-verbose

void check_debug_verbose(const RuleInput& in, RuleOutput& out) {
    const nccl::Setting* debug = setting_or_unknown(in, out, "NCCL_DEBUG", "NCCL's log level");
    if (debug == nullptr) return;
    // initDebug (src/debug.cc) compares the value with strcasecmp.
    std::string level = debug->value;
    std::transform(level.begin(), level.end(), level.begin(),
                   [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
    if (level != "INFO" && level != "TRACE") return;
    Finding& finding = out.fire("NCCL_DEBUG=" + debug->value +
                                ": every rank logs each communicator's setup (and with TRACE every call), which "
                                "slows start-up and floods the job's output at scale; keep it for diagnosis");
    add_setting_evidence(finding, *debug);
    if (in.ctx.job.total_gpus) finding.evidence.emplace_back("job_gpus", std::to_string(*in.ctx.job.total_gpus));
    // WARN keeps NCCL's warnings and its version line.
    finding.remediation.push_back(RemediationOp::set_env("NCCL_DEBUG", "WARN"));
}

const TableRule kDebugVerbose{
    RuleInfo{
        .id = "nccl.debug-verbose",
        .title = "NCCL_DEBUG left at INFO or TRACE",
        .default_action = Action::warn,
        .severity = Severity::warning,
        .scopes = kScopeLive | kScopeKubernetes | kScopeCli,
        .nccl_only = true,
        .checks = "The effective `NCCL_DEBUG` is INFO or TRACE (any case, as NCCL compares it). An advisory: it "
                  "warns by default and should not be made to block.",
        .why = "At INFO every rank prints its topology, channels, rings and trees for each communicator; at TRACE "
               "(in builds that have it) every call. On thousands of ranks that is gigabytes of log and a slower "
               "start, through a shared filesystem. It is also what makes NCCL's fallbacks visible, so it belongs in "
               "diagnostic runs (docs/troubleshooting.md), not production ones.",
        .evidence = "The value and where it was set, and the job's GPU count when known.",
        .fix = "Set `NCCL_DEBUG=WARN` (warnings and the version line only), or unset it; keep INFO for a diagnostic "
               "run.",
    },
    check_debug_verbose};

// ---------------------------------------------------------------------------
// nccl.version-old

constexpr NcclVersionParameter kMinNcclVersion{"nccl.min_version", "the oldest NCCL the images may carry"};
constexpr auto kVersionOldParameters = parameter_list(kMinNcclVersion);

void check_version_old(const RuleInput& in, RuleOutput& out) {
    const std::optional<std::string_view> wanted = kMinNcclVersion.in(in.profile);
    if (!wanted) return;
    auto minimum = nccl::parse_version(*wanted);
    if (!minimum) return;  // the schema only lets versions through
    std::string where;
    auto version = rules::image_nccl_version(in, where);
    if (!version) {
        out.unknown("cannot tell whether the image's NCCL is at least " + minimum->to_string() + " because " + where);
        return;
    }
    if (*version >= *minimum) return;
    Finding& finding = out.fire("the image carries NCCL " + version->to_string() + " (" + where + "), older than the " +
                                minimum->to_string() + " profile " + in.profile.name + " asks for");
    finding.evidence.emplace_back("nccl_version", version->to_string());
    finding.evidence.emplace_back("library", where);
    finding.evidence.emplace_back("minimum", minimum->to_string() + " (profile " + in.profile.name + ")");
    rules::add_container_evidence(finding, in.ctx);
    finding.remediation.push_back(RemediationOp::manual_step("use an image with NCCL " + minimum->to_string() +
                                                             " or later (or put a newer libnccl.so.2 first on "
                                                             "LD_LIBRARY_PATH)"));
}

const TableRule kVersionOld{
    RuleInfo{
        .id = "nccl.version-old",
        .title = "NCCL in the image older than the profile's minimum",
        .default_action = Action::warn,
        .severity = Severity::warning,
        .scopes = kScopeLive | kScopeCli,
        .checks = "On profiles that set `nccl.min_version`: the `libnccl.so.2` the task's loader finds "
                  "(`LD_LIBRARY_PATH`, `/etc/ld.so.conf{,.d}`, the system directories, in the container's view), "
                  "with the version in the file name its soname link resolves to (`libnccl.so.2.21.5`). The library "
                  "is never run or read. A library without a versioned name, or one found only through a "
                  "program's RPATH (a Python wheel's), is unknown.",
        .why = "Behaviour the node class is tuned for changes with NCCL's version: multi-node NVLink from 2.20.3 and "
               "fatal without IMEX from 2.27.3, GPUDirect RDMA over C2C by default from 2.27.3, shared memory "
               "through cuMem host allocations by default from 2.24.3. An old image silently misses them; the "
               "version is also evidence for the rules that depend on it.",
        .evidence = "The version, the library and the link it was read from, and the profile's minimum.",
        .fix = "Use an image with a newer NCCL, or put a newer `libnccl.so.2` first on `LD_LIBRARY_PATH`.",
        .parameters = kVersionOldParameters,
    },
    check_version_old};

}  // namespace

void register_nccl_tuning_rules(std::vector<const Rule*>& rules) {
    rules.push_back(&kP2pDisabled);
    rules.push_back(&kShmDisabled);
    rules.push_back(&kNvlsDisabled);
    rules.push_back(&kCumemDisabled);
    rules.push_back(&kAlgoRestricted);
    rules.push_back(&kProtoRestricted);
    rules.push_back(&kChannelsCapped);
    rules.push_back(&kBuffsizeSuspicious);
    rules.push_back(&kDebugVerbose);
    rules.push_back(&kVersionOld);
}

}  // namespace launchguard
