// The topology file NCCL on the host side of a container launch would use,
// for the propagation rules (topo.not-propagated, conf.host-not-visible), and
// the questions those rules ask of the host's files, so a front end that
// loses sight of the host (the Slurm task plugin after pyxis) can ask them
// while it still can.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "context/file_view.h"
#include "context/launch_context.h"
#include "nccl/nccl_config.h"

namespace launchguard::nccl {

struct TopologyCandidate {
    std::string path;    // as the host names it
    std::string origin;  // "host environment", "host /etc/nccl.conf:2", "profile X topology.host_path"
};

// NCCL's own file first (NCCL_TOPO_FILE from the host's env or conf files,
// else the nvidia-topologyd default path), then the profile's claim. Paths a
// net plugin supplies in-process (/proc/self/fd/N) are not the host's files.
std::vector<TopologyCandidate> host_topology_candidates(const EffectiveConfig& host_config,
                                                        std::string_view profile_host_path,
                                                        std::string_view profile_name);

// Stats and reads, through `host_files`, everything the propagation rules
// will stat or read on the host for this environment and profile: the conf
// chain, /etc/nccl.conf, every NCCL_TOPO_FILE it names, the candidates above
// and the content of the first readable one. A few stats and small reads.
void ask_host_questions(const Environment& host_env, const FileView& host_files, std::string_view profile_host_path);

}  // namespace launchguard::nccl
