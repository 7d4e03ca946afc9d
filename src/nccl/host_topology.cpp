#include "nccl/host_topology.h"

#include "nccl/topology_file.h"

namespace launchguard::nccl {
namespace {

constexpr std::string_view kTopoVariable = "NCCL_TOPO_FILE";

// As the rules judge it: an empty file gives NCCL no topology either.
bool readable_regular(const FileInfo& info) { return info.non_empty_regular(); }

}  // namespace

std::vector<TopologyCandidate> host_topology_candidates(const EffectiveConfig& host_config,
                                                        std::string_view profile_host_path,
                                                        std::string_view profile_name) {
    std::vector<TopologyCandidate> candidates;
    if (const Setting* setting = host_config.get(kTopoVariable)) {
        std::string origin = setting->source == Source::environment ? "host environment" : "host " + setting->origin;
        if (!is_in_process_path(setting->value)) candidates.push_back({setting->value, std::move(origin)});
    } else {
        candidates.push_back({std::string(kDefaultTopoPath), "host default path (nvidia-topologyd)"});
    }
    if (!profile_host_path.empty()) {
        candidates.push_back(
            {std::string(profile_host_path), "profile " + std::string(profile_name) + " topology.host_path"});
    }
    return candidates;
}

void ask_host_questions(const Environment& host_env, const FileView& host_files, std::string_view profile_host_path) {
    EffectiveConfig config = resolve(host_env, host_files);
    // conf.host-not-visible reads /etc/nccl.conf even when NCCL_CONF_FILE
    // takes precedence, and stats every topology file it names.
    const std::string system_conf(kSystemConfPath);
    if (host_files.stat(system_conf).kind == FileKind::regular) {
        if (auto text = host_files.read(system_conf)) {
            for (const auto& entry : parse_conf(system_conf, *text).entries) {
                if (entry.name == kTopoVariable && !entry.value.empty() && entry.value.front() == '/') {
                    (void)host_files.stat(entry.value);
                }
            }
        }
    }
    bool read_one = false;
    for (const auto& candidate : host_topology_candidates(config, profile_host_path, "")) {
        if (candidate.path.empty() || candidate.path.front() != '/') continue;
        if (!readable_regular(host_files.stat(candidate.path)) || read_one) continue;
        (void)host_files.read(candidate.path);  // topo.not-propagated compares it with the task's
        read_one = true;
    }
}

}  // namespace launchguard::nccl
