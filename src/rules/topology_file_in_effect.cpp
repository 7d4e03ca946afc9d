// The topology file NCCL will open for the task (topology_file_in_effect.h).
#include "rules/topology_file_in_effect.h"

#include <utility>

#include "nccl/host_topology.h"
#include "rules/rule_helpers.h"

namespace launchguard::topo_rules {

bool readable_file(const FileInfo& info) { return info.non_empty_regular(); }

TopoLookup find_topo_file(const RuleInput& in) {
    const nccl::Setting* setting = in.nccl.get(kTopoVariable);
    bool set_in_env = setting != nullptr && setting->source == nccl::Source::environment;
    if (!in.nccl.decided(kTopoVariable) && !set_in_env) {
        // The environment beats every conf file, so a conf value proves nothing.
        return {std::nullopt, rules::env_unknown_reason(in.ctx, kTopoVariable)};
    }
    if (!in.files) return {std::nullopt, "there is no view of the task's filesystem"};

    TopoFileInEffect topo;
    topo.setting = setting;
    topo.path = topo.setting ? topo.setting->value : std::string(nccl::kDefaultTopoPath);
    if (nccl::is_in_process_path(topo.path)) {
        topo.in_process = true;
        return {topo, {}};
    }
    if (topo.path.empty()) {
        // getenv returns "", NCCL's fopen("") fails, and it does not try the default path.
        topo.info.kind = FileKind::missing;
        topo.info.detail = "the value is empty";
        return {topo, {}};
    }
    if (topo.path.front() != '/') {
        return {std::nullopt,
                topo.label() + " is relative to the task's working directory, which launchguard does not know"};
    }
    topo.info = in.files->stat(topo.path);
    return {topo, {}};
}

std::string describe_state(const FileInfo& info) {
    switch (info.kind) {
        case FileKind::regular:
            return info.size_known && info.size == 0 ? "an empty file" : "a readable file";
        case FileKind::directory:
            return "a directory (NCCL opens it and reads nothing)";
        case FileKind::missing:
            return info.detail.empty() ? "missing" : "missing (" + info.detail + ")";
        case FileKind::dangling_symlink:
            return info.resolved_path.empty() ? "a dangling symlink" : "a dangling symlink to " + info.resolved_path;
        case FileKind::unreadable:
            return "unreadable by the task" + (info.detail.empty() ? "" : " (" + info.detail + ")");
        case FileKind::other:
            return "not a regular file";
        case FileKind::unknown:
            return "unknown";
    }
    return "unknown";
}

void add_topo_evidence(Finding& finding, const TopoFileInEffect& topo, const LaunchContext& ctx) {
    if (topo.setting) {
        rules::add_setting_evidence(finding, *topo.setting);
    } else {
        finding.evidence.emplace_back(kTopoVariable, "unset");
        finding.evidence.emplace_back("default_path", std::string(nccl::kDefaultTopoPath));
    }
    if (topo.in_process) return;
    bool empty_file = topo.info.kind == FileKind::regular && topo.info.size_known && topo.info.size == 0;
    finding.evidence.emplace_back("found", empty_file ? "empty file" : std::string(to_string(topo.info.kind)));
    if (!topo.info.resolved_path.empty() && topo.info.resolved_path != topo.path) {
        finding.evidence.emplace_back("resolved_path", topo.info.resolved_path);
    }
    if (!topo.info.detail.empty()) finding.evidence.emplace_back("detail", topo.info.detail);
    finding.evidence.emplace_back("container_view", ctx.files->describe());
}

std::string profile_container_path(const Profile& profile) {
    return profile.topology.container_path.empty() ? profile.topology.host_path : profile.topology.container_path;
}

std::vector<RemediationOp> mount_and_point(const std::string& host_path, const std::string& container_path) {
    return {RemediationOp::mount_file(host_path, container_path),
            RemediationOp::set_env(std::string(kTopoVariable), container_path)};
}

std::vector<RemediationOp> provide_profile_file(const Profile& profile, std::string manual_text) {
    if (profile.topology.host_path.empty()) return {RemediationOp::manual_step(std::move(manual_text))};
    return mount_and_point(profile.topology.host_path, profile_container_path(profile));
}

}  // namespace launchguard::topo_rules
