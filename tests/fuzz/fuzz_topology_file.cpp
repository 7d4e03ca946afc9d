// NCCL topology files (NCCL_TOPO_FILE): the character-level mirror of NCCL's
// reader. Properties beyond "no crash": an accepted file has a <system>, and
// parsing is deterministic.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "nccl/topology_file.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    std::string_view text(reinterpret_cast<const char*>(data), size);
    auto first = launchguard::nccl::parse_topology(text);
    auto second = launchguard::nccl::parse_topology(text);
    if (first.outcome != second.outcome || first.reason != second.reason || first.line != second.line) std::abort();
    if (first.outcome == launchguard::nccl::TopoOutcome::accepted && first.cpus.empty()) std::abort();
    return 0;
}
