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

const nccl::NcclLibrary& SharedAnalysis::nccl_library(const Environment* env, const FileView& files,
                                                      std::string_view arch) {
    if (!nccl_library_) nccl_library_ = nccl::find_nccl_library(files, nccl::loader_dirs(env, &files, arch));
    return *nccl_library_;
}

const nccl::NodePaths& SharedAnalysis::node_paths(const LaunchContext& ctx, const FileView* files,
                                                  std::optional<nccl::Version> version) {
    if (!node_paths_) node_paths_ = nccl::predict_node_paths(ctx, files, version);
    return *node_paths_;
}

}  // namespace launchguard
