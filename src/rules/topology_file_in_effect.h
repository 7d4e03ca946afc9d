// What the topo.* rules share: the topology file NCCL will open for the
// task, and the evidence and fixes that name it (rules/topology_rules.cpp,
// rules/topology_content_rules.cpp).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "nccl/topology_file.h"
#include "rules/rule.h"

namespace launchguard::topo_rules {

inline constexpr std::string_view kTopoVariable = "NCCL_TOPO_FILE";

bool readable_file(const FileInfo& info);

// The topology file NCCL will open for the task, as the task sees it.
struct TopoFileInEffect {
    const nccl::Setting* setting = nullptr;  // null: the variable is unset and NCCL tries its default path
    std::string path;
    bool in_process = false;  // /proc/self/fd/N written by a net plugin: not on any disk
    FileInfo info;

    [[nodiscard]] bool readable() const { return in_process || readable_file(info); }
    [[nodiscard]] std::string label() const {
        return setting ? std::string(kTopoVariable) + "=" + path : std::string(nccl::kDefaultTopoPath);
    }
};

// Either the file in effect, or why launchguard cannot tell which it is.
struct TopoLookup {
    std::optional<TopoFileInEffect> file;
    std::string unknown_reason;
};

TopoLookup find_topo_file(const RuleInput& in);
// What the view found, as a phrase for messages: "missing", "a dangling symlink to /x", ...
std::string describe_state(const FileInfo& info);
void add_topo_evidence(Finding& finding, const TopoFileInEffect& topo, const LaunchContext& ctx);
// Where the profile wants containers to see the node class's file.
std::string profile_container_path(const Profile& profile);
std::vector<RemediationOp> mount_and_point(const std::string& host_path, const std::string& container_path);
// The profile's file when it names one, else a human step.
std::vector<RemediationOp> provide_profile_file(const Profile& profile, std::string manual_text);

// topo.silently-ignored, topo.nccl-rejects, topo.busid-drift, topo.numa-drift, in catalog order.
void register_topology_content_rules(std::vector<const Rule*>& rules);

}  // namespace launchguard::topo_rules
