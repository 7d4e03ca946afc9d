// Judging the node itself, once, outside any task: the node-scope rules
// (power, IOMMU, PCIe links, IB ports, inventory) against a profile, with
// the topology cache that task checks read kept current on the way. The job
// prolog plugin and `launchguard node-check` both run exactly this.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/engine.h"
#include "node/node_record.h"
#include "profile/profile.h"
#include "util/error.h"

namespace launchguard {

inline constexpr const char* kDefaultTopologyCachePath = "/run/launchguard/topology.json";
inline constexpr long kDefaultTopologyCacheMaxAge = 3600;

struct NodeCheckOptions {
    Mode mode = Mode::enforce;
    std::optional<std::string> hwloc_xml;   // topology from a recording instead of this node
    std::optional<std::string> sysfs_root;  // node facts from a recorded sys/ and proc/
    // The cache task checks read. Refreshed (reused while fresh) when the
    // topology is live; a recorded hwloc XML never overwrites it. Empty:
    // neither read nor written.
    std::string topology_cache = kDefaultTopologyCachePath;
    long topology_cache_max_age = kDefaultTopologyCacheMaxAge;
    // Also read what the node record carries (node/node_record.h).
    bool record_facts = false;
};

struct NodeCheck {
    Report report;
    std::vector<std::string> rules;               // every rule evaluated, catalog order
    std::optional<Error> cache_error;             // the cache could not be refreshed; the check ran on live discovery
    std::optional<NodeRecordFacts> record_facts;  // when options.record_facts
};

// How node checks evaluate: node scope only, and nothing a front end could
// patch (a node is fixed by hand, drained or left as it is).
EvaluationOptions node_evaluation_options(Mode mode);

// An error only when the node cannot be inspected at all (an unreadable
// hwloc XML); facts that are merely unavailable become rule unknowns.
// `step`, when given, hears each step before it starts (the watchdog of
// node_watchdog.h names the step that stalled).
Result<NodeCheck> run_node_check(const Profile& profile, const NodeCheckOptions& options,
                                 const std::function<void(std::string_view)>& step = {});

}  // namespace launchguard
