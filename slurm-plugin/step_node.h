// The node's part of a step's checks (topology, sysfs facts), read once per
// step on slurmstepd's loading thread (core_loader.h); each task inherits it.
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

// What prepare_step read, moved out once by each task (nullopt: not prepared).
std::optional<NodeSnapshot> take_prepared_node_snapshot();

// Saves the node facts prepare_step read from sysfs to the node facts cache
// for the steps that follow, as root in the first task's task_init_privileged
// (the thread may already run with the user's ids). Never throws.
void save_prepared_node_facts(const PluginConfig& config) noexcept;

// The wall time of prepare_step's parts under timing=1 (empty otherwise):
// the profile, then the node snapshot and its reads (node.power, topology...).
// Read after the loading thread was joined (user_init).
const PhaseTimes& prepare_step_times();

}  // namespace launchguard::slurm
