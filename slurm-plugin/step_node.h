// The node's part of a step's checks (its topology and sysfs facts), read
// once per step in slurmstepd rather than once per task: on the thread that
// loads the core, while slurmstepd sets the step up, before any task is
// forked (core_loader.h). Each task inherits it (docs/performance.md).
#pragma once

#include "plugin_config.h"
#include "probe/context_builder.h"

namespace launchguard::slurm {

// Where the node's facts come from under this configuration: the topology
// cache, or the test fixtures hwloc-xml= and sysfs-root=. The tasks'
// build_context and prepare_step use the same.
ProbeOptions node_probe_options(const PluginConfig& config);

// Loads the step's profile (step_profile.h) and reads the node's part. Calls
// nothing of Slurm's, so it may run on a thread of its own; never throws.
// A part that cannot be read is left to each task, which reports it.
void prepare_step(const PluginConfig& config) noexcept;

// What prepare_step read, moved out (nullopt: not prepared, mode=off, or a
// failure). Each task takes its own copy, inherited through fork, once:
// moving it into the task's context costs nothing, where a copy of the
// node's facts grows with its CPUs and devices.
std::optional<NodeSnapshot> take_prepared_node_snapshot();

// Saves the node facts prepare_step read from sysfs to the node facts cache
// (node_facts_cache_path), for the steps that follow; nothing when they came
// from the cache or nothing was prepared. The loading thread cannot
// write it itself: slurmstepd takes the user's effective ids before
// user_init, usually while the thread still reads (docs/performance.md).
// Called as root in the first task's task_init_privileged; never throws.
void save_prepared_node_facts(const PluginConfig& config) noexcept;

// The wall time of prepare_step's parts under timing=1 (empty otherwise):
// the profile, then the node snapshot and its reads (node.power, topology...).
// Read after the loading thread was joined (user_init).
const PhaseTimes& prepare_step_times();

}  // namespace launchguard::slurm
