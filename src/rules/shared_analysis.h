// Work several rules need on the same launch, done at most once per
// evaluation: reading a file through the task's view and parsing it as an
// NCCL topology file is needed by topo.silently-ignored, topo.nccl-rejects
// and topo.busid-drift alike. Lives as long as one evaluate() call.
#pragma once

#include <map>
#include <string>

#include "context/file_view.h"
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

private:
    std::map<std::string, ReadTopologyFile, std::less<>> topology_files_;
};

}  // namespace launchguard
