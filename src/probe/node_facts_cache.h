// The node facts whose reading grows with the node, kept for a short while
// between Slurm steps: the CPUs' power settings (cpufreq and cpuidle of
// every CPU) and the PCIe link states of the GPUs and NICs. The first are a
// few files per CPU, about 10 ms on a 128-CPU node and more than slurmstepd's
// own set-up of a step, so every step waited for them; each link attribute
// is a read of the device's configuration space, which traps to the
// hypervisor in a VM (about 30 us per read on the development VM). Both
// change when an administrator changes them or a link retrains, so a step
// may take what a step read a minute ago on the same boot and the same root
// instead of reading them again (docs/performance.md).
//
// The file is small JSON: CPUs with the same settings are one group, so its
// size and the time to load it grow with the number of distinct settings,
// not with the CPUs. An unknown fact is kept with its reason (a VM without
// cpufreq or cpuidle). Written aside and renamed (util/atomic_file.h).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "context/node_facts.h"
#include "probe/sysfs_probe.h"
#include "util/error.h"

namespace launchguard {

inline constexpr int kNodeFactsCacheVersion = 1;

// What a cache was read for: a cache is used only for the same root and a
// set that holds what is asked (one written for NodeFactSet::all serves a
// task, not the reverse: a task leaves the shallow idle states unread).
struct NodeFactsCacheKey {
    std::string sysfs_root;  // the root the facts were read under ("/" live)
    NodeFactSet set = NodeFactSet::all;
};

struct CachedNodeFacts {
    Fact<CpuPower> power;
    // The PCIe links read for the devices of link_busids (lower-case; a
    // device without link attributes has no record). Absent: not cached.
    std::optional<Fact<std::map<std::string, PcieLinkRecord>>> pcie_links;
    std::vector<std::string> link_busids;

    // Whether the links were read for every device named (lower-cased).
    [[nodiscard]] bool links_cover(const std::vector<std::string>& busids) const;
};

std::string node_facts_cache_to_json(const CachedNodeFacts& facts, const NodeFactsCacheKey& key,
                                     std::string_view boot_id);
// The cached facts; an error names the file and what is wrong in it.
Result<CachedNodeFacts> node_facts_cache_from_json(std::string_view text, const NodeFactsCacheKey& key,
                                                   std::string_view boot_id, const std::string& origin);

// The running kernel's boot id (proc/sys/kernel/random/boot_id): a cache
// from an earlier boot is never used. Empty when it cannot be read; then no
// cache is read or written.
std::string current_boot_id();

// The cached facts when `path` holds a cache for `key` from this boot,
// written at most `max_age_seconds` ago (by its modification time); nullopt
// otherwise (missing, stale, another root or boot, unreadable or damaged).
// Each fact's source names the cache and the original source.
std::optional<CachedNodeFacts> load_fresh_node_facts_cache(const std::string& path, const NodeFactsCacheKey& key,
                                                           long max_age_seconds);

// Writes the cache atomically with mode 0644, creating its directory.
Status save_node_facts_cache(const std::string& path, const CachedNodeFacts& facts, const NodeFactsCacheKey& key);

}  // namespace launchguard
