// The CPUs' power settings (cpufreq and cpuidle of every CPU) kept for a
// short while between Slurm steps. Reading them takes a few files per CPU:
// about 10 ms on a 128-CPU node, longer than slurmstepd's own set-up of a
// step, so every step waited for it (docs/performance.md). They change only
// when an administrator changes them, so a step may take what a step read a
// minute ago on the same boot and the same root, instead of reading them
// again.
//
// The file is small JSON: CPUs with the same settings are one group, so its
// size and the time to load it grow with the number of distinct settings,
// not with the CPUs. An unknown fact is kept with its reason (a VM without
// cpufreq or cpuidle). Written aside and renamed (util/atomic_file.h).
#pragma once

#include <string>
#include <string_view>

#include "context/node_facts.h"
#include "probe/sysfs_probe.h"
#include "util/error.h"

namespace launchguard {

inline constexpr int kPowerCacheVersion = 1;

// What a cache was read for: a cache is used only for the same root and a
// set that holds what is asked (one written for NodeFactSet::all serves a
// task, not the reverse: a task leaves the shallow idle states unread).
struct PowerCacheKey {
    std::string sysfs_root;  // the root the settings were read under ("/" live)
    NodeFactSet set = NodeFactSet::all;
};

std::string power_cache_to_json(const Fact<CpuPower>& power, const PowerCacheKey& key, std::string_view boot_id);
// The cached fact; an error names the file and what is wrong in it.
Result<Fact<CpuPower>> power_cache_from_json(std::string_view text, const PowerCacheKey& key,
                                             std::string_view boot_id, const std::string& origin);

// The running kernel's boot id (proc/sys/kernel/random/boot_id): a cache
// from an earlier boot is never used. Empty when it cannot be read; then no
// cache is read or written.
std::string current_boot_id();

// The cached settings when `path` holds a cache for `key` from this boot,
// written at most `max_age_seconds` ago (by its modification time); nullopt
// otherwise (missing, stale, another root or boot, unreadable or damaged).
// The fact's source names the cache and the original source.
std::optional<Fact<CpuPower>> load_fresh_power_cache(const std::string& path, const PowerCacheKey& key,
                                                     long max_age_seconds);

// Writes the cache atomically with mode 0644, creating its directory.
Status save_power_cache(const std::string& path, const Fact<CpuPower>& power, const PowerCacheKey& key);

}  // namespace launchguard
