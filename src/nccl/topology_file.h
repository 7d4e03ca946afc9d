// NCCL_TOPO_FILE as NCCL's ncclTopoGetXmlFromFile() (src/graph/xml.cc) reads
// it: which files NCCL accepts, which it silently ignores, which make
// communicator init fail. Read from NCCL 2.30's src/graph/xml.cc and
// src/graph/topo.cc (ncclTopoGetSystem); the cases are in docs/rules.md under
// topo.silently-ignored and topo.nccl-rejects.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "context/file_view.h"

namespace launchguard::nccl {

inline constexpr std::string_view kDefaultTopoPath = "/var/run/nvidia-topologyd/virtualTopology.xml";

enum class TopoOutcome {
    accepted,          // parsed, root <system version="1"> with content
    silently_ignored,  // read but contributes nothing (empty, root not <system>, no children)
    rejected,          // NCCL init fails (WARN + error code)
};
std::string_view to_string(TopoOutcome outcome);

struct TopoPci {
    std::string busid;     // exactly as written (case preserved)
    std::string cls;       // "0x030200"
    std::string numaid;    // numaid of the enclosing <cpu>: the NUMA node NCCL will place it on
    std::string affinity;  // affinity of the enclosing <cpu>: where NCCL pins the device's threads
    int cpu_line = 0;      // line of the enclosing <cpu>
    // Bus ids of the enclosing <pci> elements, outermost first: the switches
    // NCCL counts when it classifies a GPU-NIC path (PIX, PXB, PHB).
    std::vector<std::string> bridges;
    int line = 0;
};

struct TopoCpu {
    std::string numaid;
    std::string affinity;
    int line = 0;
};

struct TopologyFile {
    TopoOutcome outcome = TopoOutcome::accepted;
    std::string reason;  // why ignored / rejected, quoting NCCL's own message
    int line = 0;        // where the defect is, 0 when not line-specific
    std::vector<TopoCpu> cpus;
    std::vector<TopoPci> pcis;                   // every <pci> in document order
    std::vector<std::string> upper_case_busids;  // bus ids NCCL will never match
};

// Parses text as NCCL 2.30 would.
TopologyFile parse_topology(std::string_view text);

// Is this NCCL_TOPO_FILE value legitimate even if no such path exists on
// disk? (aws-ofi-nccl sets /proc/self/fd/N for a memfd it wrote itself.)
bool is_in_process_path(std::string_view path);

}  // namespace launchguard::nccl
