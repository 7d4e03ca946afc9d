// /etc/launchguard/node-check.conf: how `launchguard node-check --slurm`
// runs when slurmd starts it as HealthCheckProgram, which passes no
// arguments and an environment with only SLURMD_NODENAME.
//
//   # comments start a line
//   profile = h100-cx7-ib
//   mode = enforce
//   timeout = 10
//
// One `key = value` per line; spaces around `=` are optional, values are
// taken as written (no quotes, no trailing comments: paths may hold `#`).
// An unknown key, a repeated key or a bad value is an error naming the file,
// the line and the key.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

#include "node/node_check.h"
#include "util/error.h"

namespace launchguard {

inline constexpr const char* kNodeCheckConfigPath = "/etc/launchguard/node-check.conf";
// Names another configuration file (tests, sites that keep it elsewhere).
inline constexpr const char* kNodeCheckConfigEnv = "LAUNCHGUARD_NODE_CHECK_CONF";
// A real file is a dozen lines.
inline constexpr std::size_t kMaxNodeCheckConfigBytes = 64U << 10;
// slurmd kills a HealthCheckProgram after 60 s. The check gets at most 30 s
// and each of the two scontrol calls 10 s, so even the worst case ends first.
inline constexpr int kMaxNodeCheckTimeoutSeconds = 30;

// What a check that finds nothing wrong but could not finish does to the node.
enum class OnUnknown { keep, drain };

struct NodeCheckConfig {
    std::string profile = "default";
    NodeCheckOptions options;  // mode, hwloc-xml, sysfs-root, topology-cache, topology-cache-max-age
    std::chrono::seconds timeout = std::chrono::seconds(10);
    OnUnknown on_unknown = OnUnknown::keep;
    std::optional<std::string> scontrol;    // absolute path; default: found in PATH, /usr/bin, /usr/local/bin
    std::optional<std::string> slurm_conf;  // SLURM_CONF for scontrol; default: Slurm's own
    std::optional<std::string> node_name;   // default: SLURMD_NODENAME, else the short host name
    std::optional<std::string> metrics_file;
    // A directory (shared by the nodes) where each check writes the node
    // record as <hostname>.json, atomically (node/node_record.h).
    std::optional<std::string> record_dir;
    std::string node_class;               // the record's node class; default: the profile's name
    std::optional<std::string> log_file;  // besides syslog
};

// Slurm node names are host-like; node-check hands its node's name to
// scontrol, which would read a hostlist ("gpu[001-100]", "a,b") as many
// nodes and a leading '-' as an option. A name is accepted only when it is
// 1 to kMaxSlurmNodeNameBytes of ASCII letters, digits, '-', '_' and '.',
// not starting with '-' or '.'. The error says why, without the name (the
// caller names where it came from).
inline constexpr std::size_t kMaxSlurmNodeNameBytes = 253;  // the longest DNS name
Status check_slurm_node_name(std::string_view name);

// `origin` names the text in errors (the file's path).
Result<NodeCheckConfig> parse_node_check_config(std::string_view text, const std::string& origin);

// Reads `path` with the bounded reader (util/input_file.h). A missing file at
// the default path is the default configuration; a missing file that was
// named explicitly is an error.
Result<NodeCheckConfig> load_node_check_config(const std::string& path, bool named_explicitly);

}  // namespace launchguard
