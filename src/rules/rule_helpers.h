// Small pieces several rule families share: how an NCCL setting is shown as
// evidence, how it is taken back, and how NCCL reads an integer setting.
#pragma once

#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "finding/finding.h"
#include "nccl/library_search.h"
#include "nccl/nccl_config.h"
#include "rules/rule.h"

namespace launchguard::rules {

// {NAME, literal value} then {"source", "environment" | "/etc/nccl.conf:3"}.
void add_setting_evidence(Finding& finding, const nccl::Setting& setting);

// What an integer NCCL_* setting means to ncclLoadParam (misc/param.cc): an
// empty value or one strtoll overflows on leaves NCCL's default (nullopt);
// anything else is strtoll's reading, partial or not ("8M" -> 8, "off" -> 0).
std::optional<long long> effective_int(const nccl::Setting& setting);

// Gives NCCL its own default back. A value from the task environment is
// unset. A value from a conf file cannot be unset from the environment, but
// the environment beats every conf file (NCCL's setEnvFile never overwrites
// a variable already set), so the variable is set to `default_value` there,
// and the offending line is named for removal.
std::vector<RemediationOp> restore_default(const nccl::Setting& setting, std::string_view default_value);

// The effective setting `name`, or nullptr when NCCL will not see it. When the
// task environment is unknown an absent name may still be set there: then the
// rule says it cannot tell (with `what`, e.g. "whether P2P is disabled") and
// nullptr is returned too.
// Why `name`, absent from the task environment, may still be set there: the
// environment is unknown, the one construct that sets `name` to a value
// known only at run time (LaunchContext::env_unknown), or the first
// construct that may set any variable (a pod's envFrom ConfigMap, `source`).
std::string env_unknown_reason(const LaunchContext& ctx, std::string_view name);
const nccl::Setting* setting_or_unknown(const RuleInput& in, RuleOutput& out, std::string_view name,
                                        std::string_view what);

// One precondition of a finding: it holds, it does not, or it cannot be told
// (then `reason` says why, e.g. "the job's node count is unknown: ...").
struct Condition {
    std::optional<bool> holds;
    std::string reason;

    static Condition known(bool value) { return {value, {}}; }
    static Condition unknown(std::string why) { return {std::nullopt, std::move(why)}; }

    // Certainly false: all_hold() is then false whatever the other conditions
    // say, so a rule may skip computing a costly one.
    bool fails() const { return holds.has_value() && !*holds; }
};

// True when every condition holds. One that certainly fails keeps the rule
// quiet even when others are unknown (nothing would be reported anyway);
// otherwise each unknown one becomes "cannot tell <question> because <reason>".
bool all_hold(RuleOutput& out, std::string_view question, std::initializer_list<Condition> conditions);

// NCCL's path types in distance order (src/include/graph.h PATH_*), the
// vocabulary of NCCL_P2P_LEVEL and NCCL_NET_GDR_LEVEL.
enum PathLevel : int { kPathLoc = 0, kPathPix = 4, kPathPxb = 5, kPathP2c = 6, kPathSys = 9 };
// ncclGetLevel (graph/paths.cc): an exact, case-sensitive name LOC..SYS, or a
// legacy integer when the first character is a digit (0 LOC, 1 PIX, 2 PXB,
// 3 PHB, 4 and above SYS). nullopt = NCCL ignores the value and keeps its default.
std::optional<int> parse_path_level(std::string_view value);
std::string_view path_level_name(int level);

std::string join(const std::vector<std::string>& items, std::string_view separator = ", ");

// {"container_image", ...} and {"container_mounts", ...} when the launcher
// named them (pyxis options, a pod spec): what the user asked to start.
void add_container_evidence(Finding& finding, const LaunchContext& ctx);

// " in the container" for a task that runs in one (or may), "" on the host:
// where a message says the task looks.
std::string_view where_task_runs(Runtime runtime);

// Preconditions of the node rules that read PCI configuration space: the
// node is (vm = true) or is not a VM; its topology is known; the PCI
// capabilities were read (`what`: "the bridges' ACS settings").
Condition node_is_vm(const LaunchContext& ctx, bool vm);
Condition topology_known(const LaunchContext& ctx);
Condition pci_capabilities_known(const LaunchContext& ctx, std::string_view what);

// The version of the NCCL the task's loader would find in its image
// (SharedAnalysis::nccl_library), with where it was read; or nullopt with
// `where` saying why it is unknown ("no libnccl.so.2 on the container's
// library path", "its file name carries no version").
std::optional<nccl::Version> image_nccl_version(const RuleInput& in, std::string& where);

// "400" for 400.0, "12.5" for 12.5: rates and sizes in messages.
std::string format_number(double value);

// Whether the node is aarch64 (Grace) or x86-64: from its architecture when
// known, else from the kind of its IOMMUs (Arm's SMMU, Intel VT-d, AMD-Vi),
// else from the profile (node.arch, node.grace). Neither when nothing says.
bool arm_node(const RuleInput& in);
bool x86_node(const RuleInput& in);
// The same as "aarch64", "x86_64", or "" when nothing says.
std::string node_arch(const RuleInput& in);

// The task's environment, or null when it is unknown.
const Environment* task_env(const RuleInput& in);

}  // namespace launchguard::rules
