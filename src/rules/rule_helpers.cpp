#include "rules/rule_helpers.h"

#include <array>
#include <cmath>
#include <cstdio>

namespace launchguard::rules {

void add_setting_evidence(Finding& finding, const nccl::Setting& setting) {
    finding.evidence.emplace_back(setting.name, setting.value);
    finding.evidence.emplace_back("source", setting.origin);
}

std::optional<long long> effective_int(const nccl::Setting& setting) {
    if (setting.value.empty()) return std::nullopt;
    nccl::IntValue parsed = nccl::parse_int(setting.value);
    if (parsed.overflow) return std::nullopt;
    return parsed.value;
}

std::vector<RemediationOp> restore_default(const nccl::Setting& setting, std::string_view default_value) {
    if (setting.source == nccl::Source::environment) return {RemediationOp::unset_env(setting.name)};
    return {RemediationOp::set_env(setting.name, std::string(default_value)),
            RemediationOp::manual_step("remove the line '" + setting.name + "=" + setting.value + "' (" +
                                       setting.origin + ") so that no launch inherits it")};
}

std::string env_unknown_reason(const LaunchContext& ctx, std::string_view name) {
    if (!ctx.env) return "the task's environment is unknown (" + ctx.env.reason() + ")";
    if (auto it = ctx.env_unknown.find(name); it != ctx.env_unknown.end()) {
        return std::string(name) + " is set to a value known only when the job runs: " + it->second;
    }
    if (!ctx.env_unread_sources.empty()) {
        std::string reason = ctx.env_unread_sources.front();
        if (ctx.env_unread_sources.size() > 1) {
            reason += " (and " + std::to_string(ctx.env_unread_sources.size() - 1) + " more such constructs)";
        }
        return reason;
    }
    return "the task environment is incomplete";
}

const nccl::Setting* setting_or_unknown(const RuleInput& in, RuleOutput& out, std::string_view name,
                                        std::string_view what) {
    if (const nccl::Setting* setting = in.nccl.get(name)) return setting;
    if (!in.ctx.env) {
        std::string reason = in.ctx.env.reason().empty() ? "the task environment is unknown" : in.ctx.env.reason();
        out.unknown("cannot tell " + std::string(what) + " because " + std::string(name) +
                    " may be set in the task environment, which is unknown: " + reason);
    } else if (!in.nccl.decided(name)) {
        out.unknown("cannot tell " + std::string(what) + " because " + std::string(name) +
                    " may be set: " + env_unknown_reason(in.ctx, name));
    }
    return nullptr;
}

bool all_hold(RuleOutput& out, std::string_view question, std::initializer_list<Condition> conditions) {
    bool undecided = false;
    for (const auto& condition : conditions) {
        if (condition.fails()) return false;
        if (!condition.holds.has_value()) undecided = true;
    }
    if (!undecided) return true;
    for (const auto& condition : conditions) {
        if (!condition.holds.has_value())
            out.unknown("cannot tell " + std::string(question) + " because " + condition.reason);
    }
    return false;
}

namespace {
// topoPathTypeStr (graph/topo.cc), indexed by PATH_* value.
constexpr std::array<std::string_view, 12> kPathNames = {"LOC", "NVL", "NVB", "C2C", "PIX", "PXB",
                                                         "P2C", "PXN", "PHB", "SYS", "NET", "DIS"};
// levelsOldToNew: the pre-2.12 integer levels.
constexpr std::array<int, 6> kLegacyLevels = {kPathLoc, kPathPix, kPathPxb, 8 /* PHB */, kPathSys, kPathSys};
}  // namespace

std::optional<int> parse_path_level(std::string_view value) {
    value = value.substr(0, value.find('\0'));
    for (int level = 0; level <= kPathSys; ++level) {
        if (value == kPathNames[static_cast<std::size_t>(level)]) return level;
    }
    if (value.empty() || value.front() < '0' || value.front() > '9') return std::nullopt;
    long long legacy = nccl::parse_int(value).value;
    if (legacy < 0 || legacy >= static_cast<long long>(kLegacyLevels.size())) legacy = kLegacyLevels.size() - 1;
    return kLegacyLevels[static_cast<std::size_t>(legacy)];
}

std::string_view path_level_name(int level) {
    if (level < 0 || level >= static_cast<int>(kPathNames.size())) return "?";
    return kPathNames[static_cast<std::size_t>(level)];
}

std::string join(const std::vector<std::string>& items, std::string_view separator) {
    std::string out;
    for (const auto& item : items) {
        if (!out.empty()) out += separator;
        out += item;
    }
    return out;
}

// From the node's facts, then its profile.
std::string node_arch(const RuleInput& in) {
    const NodeFacts& node = in.ctx.node;
    if (node.arch) return *node.arch;
    if (node.iommu_units) {
        for (const IommuUnit& unit : *node.iommu_units) {
            if (unit.kind.starts_with("arm-smmu")) return "aarch64";
            if (unit.kind == "intel-vt-d" || unit.kind == "amd-vi") return "x86_64";
        }
    }
    if (in.profile.node.arch) return *in.profile.node.arch;
    return in.profile.node.grace ? "aarch64" : "";
}

const Environment* task_env(const RuleInput& in) { return in.ctx.env ? &in.ctx.env.value() : nullptr; }

bool arm_node(const RuleInput& in) { return node_arch(in) == "aarch64"; }

bool x86_node(const RuleInput& in) { return node_arch(in) == "x86_64"; }

std::string format_number(double value) {
    if (std::floor(value) == value && std::fabs(value) < 1e15) return std::to_string(static_cast<long long>(value));
    char buffer[32];
    std::snprintf(buffer, sizeof buffer, "%g", value);
    return buffer;
}

void add_container_evidence(Finding& finding, const LaunchContext& ctx) {
    if (ctx.container.image) finding.evidence.emplace_back("container_image", ctx.container.image.value());
    if (!ctx.container.requested_mounts.empty()) {
        finding.evidence.emplace_back("container_mounts", join(ctx.container.requested_mounts));
    }
}

std::string_view where_task_runs(Runtime runtime) { return runtime == Runtime::bare ? "" : " in the container"; }

Condition node_is_vm(const LaunchContext& ctx, bool vm) {
    if (!ctx.node.virtualization)
        return Condition::unknown("whether the node is a VM is unknown: " + ctx.node.virtualization.reason());
    return Condition::known((*ctx.node.virtualization != "none") == vm);
}

Condition topology_known(const LaunchContext& ctx) {
    if (!ctx.topology) return Condition::unknown("the node topology is unknown: " + ctx.topology.reason());
    return Condition::known(true);
}

Condition pci_capabilities_known(const LaunchContext& ctx, std::string_view what) {
    if (!ctx.node.pci_capabilities)
        return Condition::unknown(std::string(what) + " are unknown: " + ctx.node.pci_capabilities.reason());
    return Condition::known(true);
}

std::optional<nccl::Version> image_nccl_version(const RuleInput& in, std::string& where) {
    if (in.files == nullptr) {
        where = "the task's file view is unknown";
        return std::nullopt;
    }
    if (!in.ctx.env) {
        where = "the task environment, whose LD_LIBRARY_PATH the loader searches, is unknown";
        return std::nullopt;
    }
    const nccl::NcclLibrary& lib = in.shared.nccl_library(&in.ctx.env.value(), *in.files, node_arch(in));
    if (lib.found.path.empty()) {
        where = lib.found.undecided.empty()
                    ? "no libnccl.so.2 is on the loader's path in " + in.files->describe() +
                          " (a Python wheel's own NCCL is found through its RPATH, which is not read)"
                    : in.files->describe() + " cannot say whether " + join(lib.found.undecided) + " exists";
        return std::nullopt;
    }
    if (!lib.version) {
        where = lib.version_source + " carries no version in its file name";
        return std::nullopt;
    }
    where = lib.version_source;
    return lib.version;
}

}  // namespace launchguard::rules
