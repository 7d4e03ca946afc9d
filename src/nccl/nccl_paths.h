// What NCCL will decide about paths on one node, before launch: each GPU's
// local NICs and the path to them, whether GPUDirect RDMA is used, and
// whether two GPUs talk P2P. A model of NCCL 2.30.7's src/graph (topo.cc builds
// the nodes and links, paths.cc computes the paths and verdicts), and of what
// earlier releases (back to 2.23) decide differently; each step in
// nccl_paths.cpp names the NCCL function it mirrors. Where the answer hangs on
// what only the CUDA driver or the network plugin reports (a file without
// <gpu>, <nvlink> or <net>), the field is unknown and says why.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "nccl/library_search.h"
#include "nccl/topology_elements.h"

namespace launchguard::nccl {

// NCCL's path types, nearest first, with NCCL 2.30's numbering (graph.h).
enum class Path { loc = 0, nvl, nvb, c2c, pix, pxb, p2c, pxn, phb, sys, net, dis };
std::string_view to_string(Path path);

// The release whose logic applies when none is given (the newest 2.30 tag),
// and the oldest release whose path logic the model follows.
inline constexpr Version kModelNcclVersion{2, 30, 7};
inline constexpr Version kOldestModelledNcclVersion{2, 23, 0};

// The NCCL environment the model reads, and the NCCL release whose logic
// applies (nullopt: kModelNcclVersion).
struct PathSettings {
    std::map<std::string, std::string> env;  // NCCL_* variables as the task sees them
    std::optional<Version> nccl_version;
    std::string version_source;  // where nccl_version came from; "" = the image's libnccl
};

// Why the model cannot stand for `version` ("" when it can): a release older
// than kOldestModelledNcclVersion, or another major version.
std::string unmodelled_nccl_version(const Version& version);

struct GpuPathVerdict {
    std::string busid;  // lower case dddd:bb:dd.f
    int line = 0;
    int dev = 0;                    // NVML index: <gpu dev>, else bus id order
    std::vector<std::string> nics;  // bus ids of its local NICs (ncclTopoGetLocal)
    std::string nic;                // the NIC it uses on channel 0 (ncclTopoGetLocalNet)
    std::optional<Path> path;       // to `nic`, as ncclTopoCheckGdr judges it in ncclTopoComputePaths
    std::optional<Path> nccl_path;  // what NCCL keeps afterwards (through the CPU when GDR is off)
    std::string pxn_via;            // bus id of the NVLink peer when path is PXN
    std::optional<bool> gdr;        // receive side (read=0); nullopt: unknown
    std::optional<bool> gdr_read;   // send side (read=1)
    std::string gdr_mode;           // "default", "pci" (C2C GPU through PCI) when on
    std::string gdr_why;            // the deciding fact, or why unknown
    std::string gdr_cause;          // "setting NCCL_NET_GDR_LEVEL", "slot", "plugin", "driver" when off
    std::string unknown;            // what the file leaves to the driver or plugin
    std::vector<Path> nic_paths;    // to every NIC of PathModel::nics, as ncclTopoCheckGdr sees it
};

struct GpuPairVerdict {
    std::string a;
    std::string b;
    std::optional<Path> path;       // nullopt: NVLinks unknown (the driver adds them)
    std::optional<Path> pci_path;   // the path without NVLink
    std::optional<Path> nccl_path;  // what NCCL keeps (through the CPU when P2P is off; NET, see transport)
    std::string transport;          // "P2P", "SHM" or "NET" (ncclTopoCheckNet); "" when unknown
    std::optional<bool> p2p;
    std::string p2p_why;
    std::string unknown;
};

struct PathModel {
    bool built = false;
    std::string error;  // why no model (file rejected, attribute missing)
    std::vector<GpuPathVerdict> gpus;
    std::vector<GpuPairVerdict> pairs;  // a < b, in GPU order
    std::vector<std::string> nics;      // every NIC bus id, in NET order
    Path gdr_level = Path::pxb;         // effective NCCL_NET_GDR_LEVEL
    std::string gdr_level_source;       // "NCCL default for 2.30", "NCCL_NET_GDR_LEVEL=PHB"
    Path p2p_level = Path::pxb;
    std::string p2p_level_source;
    bool pxn_disabled = false;
    std::string nccl_version;  // which release's logic was applied
    std::vector<std::string> notes;
};

PathModel compute_paths(const TopologyTree& tree, const PathSettings& settings);

// NCCL's level parser (ncclGetLevel in paths.cc): a path name, or the old
// numbers 0-5; nullopt when NCCL would ignore the value.
std::optional<Path> parse_level(std::string_view text, const Version& version = kModelNcclVersion);

}  // namespace launchguard::nccl
