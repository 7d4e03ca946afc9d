// The node record: what `node-check --format json` prints and `--record-dir`
// writes, so that `launchguard fleet` can judge many nodes together. Besides
// the report it names the node and carries the facts that define conformance
// and drift within a node class (kernel, driver, HCA firmware, topology file,
// power and IOMMU settings, inventory). Every fact is read from the probes
// under the check's injectable roots; a fact that cannot be read is null with
// the reason, never guessed. The shape is versioned (kNodeRecordSchema) and
// documented in docs/cli.md.
#pragma once

#include <boost/json/object.hpp>
#include <chrono>
#include <optional>
#include <string>
#include <string_view>

#include "context/launch_context.h"
#include "engine/engine.h"
#include "node/node_verdict.h"
#include "profile/profile.h"

namespace launchguard {

inline constexpr std::string_view kNodeRecordSchema = "launchguard.node-record/v1";

// Fact names, as the record spells them. Declared here because `fleet` maps
// them to layers and people grep for them.
namespace record_fact {
inline constexpr const char* kKernelRelease = "kernel.release";
inline constexpr const char* kKernelCmdline = "kernel.cmdline";
inline constexpr const char* kArch = "kernel.arch";
inline constexpr const char* kVirtualization = "virt.platform";
inline constexpr const char* kIommuMode = "iommu.mode";
inline constexpr const char* kGpuDriver = "gpu.driver_version";
inline constexpr const char* kGpuCount = "inventory.gpus";
inline constexpr const char* kHcaCount = "inventory.hcas";
inline constexpr const char* kActiveIbPorts = "inventory.active_ib_ports";
inline constexpr const char* kNumaNodes = "inventory.numa_nodes";
inline constexpr const char* kCpuCount = "inventory.cpus";
inline constexpr const char* kHcaModels = "hca.models";
inline constexpr const char* kHcaFirmware = "hca.firmware";
inline constexpr const char* kTopoFile = "nccl.topo_file";
inline constexpr const char* kTopoFileHash = "nccl.topo_file_hash";
inline constexpr const char* kGovernor = "cpu.governor";
inline constexpr const char* kCstates = "cpu.cstates";
inline constexpr const char* kNumaBalancing = "cpu.numa_balancing";
inline constexpr const char* kPcieLinks = "pcie.links";
inline constexpr const char* kPeerMemory = "gpu.peer_memory";
}  // namespace record_fact

// The node's identity and facts, read while the check's context is at hand.
struct NodeRecordFacts {
    std::optional<std::string> hostname;  // nullopt: unreadable (hostname_reason says why)
    std::string hostname_reason;
    // fact name -> {"value": ..., "source": "..."} or {"value": null, "reason": "..."}
    boost::json::object facts;
};

// `root`: where node facts were read ("/" live, a recorded tree in tests);
// hostname, kernel release, driver, HCA firmware and peer memory are read
// under it, the NCCL topology file through a view of it.
NodeRecordFacts collect_node_record_facts(const LaunchContext& ctx, const Profile& profile, const std::string& root);

struct NodeRecordHeader {
    std::string node_class;  // the profile's name unless the site names classes itself
    std::chrono::system_clock::time_point checked_at;
};

// The record: the report's JSON (report/json_report.h) with "schema", "node",
// "checked_at", "health", "rules" (one outcome per rule) and "facts" added.
boost::json::object node_record_json(const Report& report, const NodeVerdict& verdict, const NodeRecordFacts& facts,
                                     const NodeRecordHeader& header);

// A record for a node whose check could not run or finish: health unknown,
// the problem, no facts. hostname: this machine's (gethostname) when empty.
boost::json::object unknown_node_record_json(const std::string& problem, const NodeRecordHeader& header,
                                             std::string hostname = {});

// A fact's "value" as people read it and the metrics and the fleet report
// show it: strings as they are, booleans and numbers as JSON writes them;
// nullopt for null (the node could not read it).
std::optional<std::string> fact_value_text(const boost::json::value& value);

// "2026-05-01T10:00:00Z"
std::string utc_timestamp(std::chrono::system_clock::time_point when);

// Record file name for a host: "<hostname>.json", or an error when the name
// could not be a file name of its own ("", ".", a slash).
std::optional<std::string> record_file_name(std::string_view hostname);

// 64-bit FNV-1a of the bytes as "fnv1a64:<16 hex digits>". It tells two
// versions of a file apart for drift, nothing more: no adversary chooses the
// topology file, and a SHA would add libcrypto to every binary that links the
// node layer (the SPANK plugin among them).
std::string content_hash(std::string_view bytes);

}  // namespace launchguard
