#include "rules/shared_analysis.h"

namespace launchguard {

const ReadTopologyFile& SharedAnalysis::topology_file(const FileView& files, const std::string& path) {
    auto found = topology_files_.find(path);
    if (found != topology_files_.end()) return found->second;
    ReadTopologyFile entry;
    entry.text = files.read(path);
    if (entry.text) entry.parsed = nccl::parse_topology(*entry.text);
    return topology_files_.emplace(path, std::move(entry)).first->second;
}

}  // namespace launchguard
