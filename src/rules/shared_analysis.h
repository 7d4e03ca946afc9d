// Work several rules need on the same launch, done at most once per
// evaluation: reading a file through the task's view and parsing it as an
// NCCL topology file is needed by topo.silently-ignored, topo.nccl-rejects
// and topo.busid-drift alike. Lives as long as one evaluate() call.
#pragma once

#include <map>
#include <optional>
#include <string>

#include "context/file_view.h"
#include "context/launch_context.h"
#include "nccl/library_search.h"
#include "nccl/node_paths.h"
#include "nccl/topology_file.h"
#include "util/error.h"

namespace launchguard {

struct ReadTopologyFile {
    Result<std::string> text = std::string();
    nccl::TopologyFile parsed;  // meaningful only when text is ok
};

class SharedAnalysis {
public:
    // Reads `path` through `files` and parses it, or returns the earlier result.
    const ReadTopologyFile& topology_file(const FileView& files, const std::string& path);

    // The NCCL the task's loader would find (nccl/library_search.h), looked
    // up on the first call: some 25 file lookups, so only rules that need
    // the version ask. `arch`: the node's, as nccl::loader_dirs takes it.
    const nccl::NcclLibrary& nccl_library(const Environment* env, const FileView& files, std::string_view arch);

    // NCCL's predicted paths for the launch (nccl/node_paths.h), computed on
    // the first call: the nccl.path rules all judge the same model.
    // `version`: the image's NCCL, the same for every rule of one evaluation.
    const nccl::NodePaths& node_paths(const LaunchContext& ctx, const FileView* files,
                                      std::optional<nccl::Version> version);

private:
    std::map<std::string, ReadTopologyFile, std::less<>> topology_files_;
    std::optional<nccl::NcclLibrary> nccl_library_;
    std::optional<nccl::NodePaths> node_paths_;
};

}  // namespace launchguard
