// plugstack.conf arguments of spank_launchguard.so, and the policy for the
// user's --launchguard option. Pure C++ with no Slurm dependency, so it is
// unit-tested directly (tests/unit/slurm_plugin/).
//
//   required /usr/lib/slurm/spank_launchguard.so profile=h100-cx7-ib mode=enforce user-modes=enforce,warn
//            topology-cache=/run/launchguard/topology.xml on-error=allow    (one line in the file)
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "finding/mode.h"
#include "util/error.h"

namespace launchguard::slurm {

enum class OnError { allow, block };

struct PluginConfig {
    std::string profile = "default";  // embedded name or YAML path
    Mode mode = Mode::enforce;        // the site's mode
    // Modes a user may pick with --launchguard. Empty = the default policy:
    // the site mode, anything stricter, and `warn` (report without changing).
    std::vector<Mode> user_modes;
    std::string topology_cache = "/run/launchguard/topology.json";
    long topology_cache_max_age = 3600;  // seconds; older caches are rediscovered
    // How long a step may take the node facts an earlier step read
    // (probe/node_facts_cache.h) instead of reading them; 0: never.
    long node_facts_max_age = 60;
    // How long user_init waits for the step's read of the node, and a task
    // for the verdict another task of the step is computing, before
    // on-error decides. 0: no bound on the first, no wait for the second.
    long node_read_timeout = 10;
    OnError on_error = OnError::allow;      // when launchguard itself cannot run
    std::optional<std::string> hwloc_xml;   // tests: node topology from this file
    std::optional<std::string> sysfs_root;  // tests: node facts from this root
    // timing=1: "launchguard: timing ..." lines to the slurmd log (docs/slurm.md).
    bool timing = false;
};

// Every argument is key=value; an unknown key, a missing '=' or a bad value is
// an error naming the argument. Arguments cannot be quoted (Slurm splits on
// whitespace), so paths with spaces are not supported.
Result<PluginConfig> parse_plugin_args(const std::vector<std::string>& args);

// Whether a user may choose `requested` under this configuration.
bool user_may_choose(const PluginConfig& config, Mode requested);
// The node facts cache's file: node-facts.json in the topology cache's directory.
std::string node_facts_cache_path(const PluginConfig& config);
std::string allowed_user_modes(const PluginConfig& config);

}  // namespace launchguard::slurm
